/*
 * sampler.c: sampling a process's call stacks with perf_event_open (trove/sample.h).
 *
 * The events. One software task-clock event (or hardware cycles, where the machine has a
 * PMU) per online CPU and per target task, in frequency mode (sample_freq = hz), counting
 * user space only (exclude_kernel: what perf_event_paranoid 2, the common default, allows
 * an unprivileged user on their own processes), with a user-space call chain
 * (PERF_SAMPLE_CALLCHAIN, exclude_callchain_kernel: the kernel walks the frame pointers),
 * PERF_RECORD_SWITCH for context switches, MMAP2 records for the mappings made while it
 * runs (with build ids when the kernel has attr.build_id, 5.12 and later), COMM, FORK and
 * EXIT, and every time on CLOCK_MONOTONIC (use_clockid), trove's events' clock.
 *
 * Why per CPU and inherit. Threads that do not exist yet must be sampled too, and the
 * kernel's way of following them is inherit = 1: the event is copied into every task the
 * target creates from then on, threads and processes. But the kernel refuses to mmap a
 * ring for an inherited event that follows its task across CPUs (cpu = -1), since every
 * descendant would write into one buffer from every CPU; so, as perf record does, the
 * events are per task and per CPU, and the inherited copies write into their CPU's ring.
 *
 *   spawn  (trove_sampler_spawn) the command is forked and waits on a pipe; one event per
 *          CPU is opened on it with enable_on_exec, then it is let go to exec: sampling
 *          starts at the exec, and its threads and children inherit the events.
 *   attach (trove_sampler_attach) the events are opened on each thread listed in
 *          /proc/PID/task, per CPU, each with inherit (so the threads a sampled thread
 *          starts are sampled as well); the events of one CPU share the ring of the first
 *          (PERF_EVENT_IOC_SET_OUTPUT, allowed between events of one CPU), so the rings
 *          are one per CPU however many threads there are. Listing and opening repeat
 *          until a listing shows no thread not yet opened: a thread started before its
 *          creator's event existed is then found, and any thread started later inherits.
 *          No polling for new threads is needed. The cost is threads x CPUs descriptors
 *          (RLIMIT_NOFILE; the CLI raises its soft limit).
 *
 * Reading. trove_sampler_poll waits on the rings (poll, POLLIN past a quarter of a ring)
 * and hands every ring to the recorder (recorder.c), which copies the records out, puts
 * them in time order and applies them; the tails go back to the kernel after each read.
 * Mappings that exist before sampling starts come from /proc/PID/maps (attach) or from the
 * kernel's own records of the exec (spawn).
 */
#define _GNU_SOURCE /* syscall, pipe2 */
#include "trove/sample.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "perf_records.h"
#include "proc_maps.h"
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS 4096
#define MAX_ATTACH_ROUNDS 64

struct ring {
    int fd;          /* the event whose ring this is */
    uint8_t *base;   /* metadata page, then data */
    size_t map_len;
    uint64_t data_size;
    int hup; /* poll said POLLHUP (its event's task is gone): polled no more, read still */
};

struct trove_sampler {
    struct trove_sample_options o;
    struct trove_sample_set *set;
    struct trove__recorder *rec; /* the records, applied */
    int spawned;
    pid_t pid;
    int ended;  /* the target is gone (a spawned command reaped) */
    int status; /* its wait status */
    int stopped;
    int err;    /* sticky */
    int event;  /* TROVE_SAMPLE_EVENT_* opened */
    int use_build_id;
    int no_cycles; /* auto found no cycles event */
    long page;

    int *cpu;
    size_t ncpu;
    struct ring *ring; /* one per CPU */
    struct pollfd *pfd; /* one per CPU, and the pidfd */
    size_t *pfd_ring;   /* the ring of each (SIZE_MAX: the pidfd) */
    int pidfd;          /* the target's pidfd (readable once it ends), or -1 */
    int *fds;          /* every event, ring owners too */
    size_t n_fds, cap_fds;
    uint32_t *tids;    /* attach: the threads opened */
    size_t n_tids, cap_tids;

    struct trove__perf_ring *rr; /* one per CPU, for each read */
    struct trove_sampler_stats st; /* the sampler's fields; the counts are the recorder's */
};

const char *trove_sample_event_name(int event)
{
    switch (event) {
    case TROVE_SAMPLE_EVENT_AUTO:
        return "auto";
    case TROVE_SAMPLE_EVENT_TASK_CLOCK:
        return "task-clock";
    case TROVE_SAMPLE_EVENT_CYCLES:
        return "cycles";
    default:
        return NULL;
    }
}

void trove_sample_defaults(struct trove_sample_options *o)
{
    o->hz = TROVE_SAMPLE_HZ_DEFAULT;
    o->event = TROVE_SAMPLE_EVENT_AUTO;
    o->ring_pages = TROVE_SAMPLE_RING_PAGES_DEFAULT;
}

int trove_sample_refused(int rc) { return rc == -EACCES || rc == -EPERM || rc == -ENOSYS; }

static long read_sysctl(const char *path)
{
    char buf[64];
    long v = -9999;
    FILE *f = fopen(path, "re");
    if (!f)
        return v;
    if (!fgets(buf, sizeof buf, f) || sscanf(buf, "%ld", &v) != 1)
        v = -9999;
    fclose(f);
    return v;
}

/* The diag for perf_event_open failing with errno e on `what`. Returns -e. */
static int open_error(struct trove_diag *diag, int e, const char *what)
{
    long paranoid = read_sysctl("/proc/sys/kernel/perf_event_paranoid");
    char level[32];
    if (paranoid == -9999)
        snprintf(level, sizeof level, "unreadable");
    else
        snprintf(level, sizeof level, "%ld", paranoid);
    switch (e) {
    case EACCES:
    case EPERM:
        return TROVE_FAIL(diag, -e,
                          0, "perf_event_open refused by the kernel (%s) for %s: "
                          "kernel.perf_event_paranoid is %s, and sampling your own processes "
                          "needs 2 or lower (sysctl -w kernel.perf_event_paranoid=2), another "
                          "user's needs CAP_PERFMON or root; in a container the seccomp profile "
                          "must allow perf_event_open (see docs/sampling.md)",
                          e == EACCES ? "EACCES" : "EPERM", what, level);
    case ENOSYS:
        return TROVE_FAIL(diag, -e, 0,
                          "perf_event_open refused by the kernel (ENOSYS) for %s: this kernel "
                          "has no perf events, or a container's seccomp filter hides the call "
                          "(see docs/sampling.md)",
                          what);
    case EMFILE:
    case ENFILE:
        return TROVE_FAIL(diag, -e, 0,
                          "perf_event_open for %s: out of file descriptors (one per thread and "
                          "CPU; raise ulimit -n)",
                          what);
    default:
        return TROVE_FAIL(diag, -e, 0, "perf_event_open for %s: %s", what, strerror(e));
    }
}

/* The online CPUs (/sys/devices/system/cpu/online: "0-3,5"), else 0 .. nprocs - 1. */
static int online_cpus(struct trove_sampler *s)
{
    char buf[4096];
    FILE *f = fopen("/sys/devices/system/cpu/online", "re");
    size_t n = 0;
    int *v = trove__mallocarray(MAX_CPUS, sizeof *v);
    if (!v) {
        if (f)
            fclose(f);
        return TROVE_ERR_NOMEM;
    }
    if (f && fgets(buf, sizeof buf, f)) {
        char *p = buf;
        while (*p && *p != '\n') {
            char *end;
            long a = strtol(p, &end, 10), b;
            if (end == p || a < 0)
                break;
            b = a;
            p = end;
            if (*p == '-') {
                b = strtol(p + 1, &end, 10);
                if (end == p + 1 || b < a)
                    break;
                p = end;
            }
            for (long c = a; c <= b && n < MAX_CPUS; c++)
                v[n++] = (int)c;
            if (*p == ',')
                p++;
        }
    }
    if (f)
        fclose(f);
    if (n == 0) {
        long k = sysconf(_SC_NPROCESSORS_ONLN);
        for (long c = 0; c < (k > 0 ? k : 1) && n < MAX_CPUS; c++)
            v[n++] = (int)c;
    }
    s->cpu = v;
    s->ncpu = n;
    return TROVE_OK;
}

static void fill_attr(const struct trove_sampler *s, struct perf_event_attr *a, int event,
                      int spawn)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    if (event == TROVE_SAMPLE_EVENT_CYCLES) {
        a->type = PERF_TYPE_HARDWARE;
        a->config = PERF_COUNT_HW_CPU_CYCLES;
    } else {
        a->type = PERF_TYPE_SOFTWARE;
        a->config = PERF_COUNT_SW_TASK_CLOCK;
    }
    a->freq = 1;
    a->sample_freq = s->o.hz;
    a->sample_type = TROVE__PERF_SAMPLE_TYPE;
    a->sample_id_all = 1;
    a->sample_max_stack = TROVE_SAMPLE_MAX_FRAMES;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->exclude_callchain_kernel = 1;
    a->inherit = 1;
    a->mmap = 1;
    a->mmap2 = 1;
    a->comm = 1;
    a->comm_exec = 1;
    a->task = 1;
    a->context_switch = 1;
    a->build_id = s->use_build_id ? 1 : 0;
    a->use_clockid = 1;
    a->clockid = CLOCK_MONOTONIC;
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)(s->o.ring_pages * (uint64_t)s->page / 4);
    if (spawn) {
        a->disabled = 1;
        a->enable_on_exec = 1;
    }
}

static int perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int *fd_out)
{
    long fd = syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return -errno;
    *fd_out = (int)fd;
    return 0;
}

static int keep_fd(struct trove_sampler *s, int fd)
{
    if (s->n_fds == s->cap_fds) {
        size_t cap = s->cap_fds ? s->cap_fds * 2 : 16;
        int *q = trove__realloc(s->fds, cap * sizeof *q);
        if (!q)
            return TROVE_ERR_NOMEM;
        s->fds = q;
        s->cap_fds = cap;
    }
    s->fds[s->n_fds++] = fd;
    return TROVE_OK;
}

/*
 * Open the event on task pid and CPU index ci, the event kind chosen on the first open
 * (auto: cycles, else task-clock) and attr.build_id dropped if the kernel lacks it. The fd
 * is kept in s->fds. Returns TROVE_OK or -errno (diag set, naming `what`).
 */
static int open_one(struct trove_sampler *s, pid_t pid, size_t ci, const char *what, int *fd_out,
                    struct trove_diag *diag)
{
    struct perf_event_attr a;
    int rc, fd = -1;
    for (;;) {
        int event = s->event;
        if (!event)
            event = s->o.event != TROVE_SAMPLE_EVENT_AUTO ? s->o.event
                    : s->no_cycles                       ? TROVE_SAMPLE_EVENT_TASK_CLOCK
                                                         : TROVE_SAMPLE_EVENT_CYCLES;
        fill_attr(s, &a, event, s->spawned);
        if ((rc = perf_open(&a, pid, s->cpu[ci], &fd)) == 0) {
            s->event = event;
            break;
        }
        if (!s->event && s->o.event == TROVE_SAMPLE_EVENT_AUTO &&
            event == TROVE_SAMPLE_EVENT_CYCLES &&
            (rc == -ENOENT || rc == -EOPNOTSUPP || rc == -ENODEV || rc == -EINVAL)) {
            s->no_cycles = 1; /* no PMU (a VM, say): task-clock */
            continue;
        }
        if (!s->event && s->use_build_id && (rc == -EINVAL || rc == -E2BIG)) {
            s->use_build_id = 0; /* a kernel before 5.12: no build ids in MMAP2 */
            continue;
        }
        return open_error(diag, -rc, what);
    }
    if ((rc = keep_fd(s, fd)) != TROVE_OK) {
        close(fd);
        return rc;
    }
    *fd_out = fd;
    return TROVE_OK;
}

/* mmap the ring of CPU index ci on event fd, halving the size while the kernel's
 * locked-memory limit refuses it. */
static int map_ring(struct trove_sampler *s, size_t ci, int fd, struct trove_diag *diag)
{
    struct ring *r = &s->ring[ci];
    uint32_t pages = s->o.ring_pages;
    for (;;) {
        size_t len = (size_t)(pages + 1) * (size_t)s->page;
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
            *r = (struct ring){fd, p, len, (uint64_t)pages * (uint64_t)s->page, 0};
            if (pages < s->st.ring_pages || !s->st.ring_pages)
                s->st.ring_pages = pages;
            return TROVE_OK;
        }
        if (errno == EPERM && pages > 1) {
            pages /= 2;
            continue;
        }
        /* EPERM at one page is the locked-memory limit, not a refusal to sample. */
        if (errno == EPERM)
            return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                              "mmap of the perf ring of CPU %d: over the locked-memory limit "
                              "even at one page (kernel.perf_event_mlock_kb, ulimit -l)",
                              s->cpu[ci]);
        return TROVE_FAIL(diag, -errno, 0, "mmap of the perf ring of CPU %d (%u pages): %s",
                          s->cpu[ci], pages, strerror(errno));
    }
}

static int new_sampler(const struct trove_sample_options *given, struct trove_sample_set *set,
                       struct trove_sampler **out, struct trove_diag *diag)
{
    struct trove_sample_options opt, *o = &opt;
    struct trove_sampler *s;
    long max_rate;
    int rc;

    if (!given || !set || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "bad arguments to the sampler");
    opt = *given; /* a field left 0 is its default (a zeroed struct: every default) */
    if (!opt.hz)
        opt.hz = TROVE_SAMPLE_HZ_DEFAULT;
    if (!opt.ring_pages)
        opt.ring_pages = TROVE_SAMPLE_RING_PAGES_DEFAULT;
    if (o->hz < 1 || o->hz > 100000)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "a rate of %" PRIu32 " Hz is not 1 .. 100000",
                          o->hz);
    max_rate = read_sysctl("/proc/sys/kernel/perf_event_max_sample_rate");
    if (max_rate > 0 && o->hz > (uint64_t)max_rate)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "a rate of %" PRIu32 " Hz is over kernel.perf_event_max_sample_rate (%ld)",
                          o->hz, max_rate);
    if (!trove_sample_event_name(o->event))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "unknown event %d", o->event);
    if (o->ring_pages < 1 || o->ring_pages > TROVE_SAMPLE_RING_PAGES_MAX ||
        (o->ring_pages & (o->ring_pages - 1)))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "ring pages %" PRIu32 " is not a power of two up to %u", o->ring_pages,
                          TROVE_SAMPLE_RING_PAGES_MAX);
    if (!(s = trove__calloc(1, sizeof *s)))
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    s->o = *o;
    s->set = set;
    s->pid = -1;
    s->pidfd = -1;
    s->use_build_id = 1;
    s->page = sysconf(_SC_PAGESIZE);
    if (s->page <= 0)
        s->page = 4096;
    if ((rc = trove__recorder_new(set, &s->rec)) != TROVE_OK || (rc = online_cpus(s)) != TROVE_OK ||
        !(s->ring = trove__calloc(s->ncpu, sizeof *s->ring)) ||
        !(s->rr = trove__calloc(s->ncpu, sizeof *s->rr)) ||
        !(s->pfd = trove__calloc(s->ncpu + 1, sizeof *s->pfd)) ||
        !(s->pfd_ring = trove__calloc(s->ncpu + 1, sizeof *s->pfd_ring))) {
        trove_sampler_free(s);
        return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
    }
    for (size_t i = 0; i < s->ncpu; i++)
        s->ring[i].fd = -1;
    s->st.hz = o->hz;
    s->st.cpus = (uint32_t)s->ncpu;
    *out = s;
    return TROVE_OK;
}

/* A pidfd of pid (Linux 5.3), which polls readable once the process has ended, so that
 * the end is seen at once rather than on the next timeout; -1 where there is none. */
static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd >= 0 ? (int)fd : -1;
#else
    (void)pid;
    return -1;
#endif
}

/* ---- spawn ----------------------------------------------------------------------------- */

/* The child: wait for the parent's go, then exec; an exec error goes back on err_fd. */
static void child_run(char *const argv[], int go_fd, int err_fd)
{
    char c;
    ssize_t r;
    int e;
    sigset_t none;
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    do
        r = read(go_fd, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r != 1)
        _exit(127); /* the parent gave up */
    execvp(argv[0], argv);
    e = errno;
    if (write(err_fd, &e, sizeof e) < 0)
        _exit(127);
    _exit(127);
}

int trove_sampler_spawn(const struct trove_sample_options *o, char *const argv[],
                        struct trove_sample_set *set, struct trove_sampler **out,
                        struct trove_diag *diag)
{
    struct trove_sampler *s = NULL;
    int go[2] = {-1, -1}, err[2] = {-1, -1}, rc, e = 0;
    ssize_t n;
    char what[64];

    if (!argv || !argv[0] || !out)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no command to sample");
    *out = NULL;
    if ((rc = new_sampler(o, set, &s, diag)) != TROVE_OK)
        return rc;
    s->spawned = 1;
    if (pipe2(go, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        rc = TROVE_FAIL(diag, -errno, 0, "pipe: %s", strerror(errno));
        goto out;
    }
    if ((s->pid = fork()) < 0) {
        rc = TROVE_FAIL(diag, -errno, 0, "fork: %s", strerror(errno));
        goto out;
    }
    if (s->pid == 0)
        child_run(argv, go[0], err[1]);
    close(go[0]);
    close(err[1]);
    go[0] = err[1] = -1;
    s->pidfd = pidfd_of(s->pid);
    snprintf(what, sizeof what, "the command (pid %d)", (int)s->pid);
    for (size_t ci = 0; ci < s->ncpu; ci++) {
        int fd;
        if ((rc = open_one(s, s->pid, ci, what, &fd, diag)) != TROVE_OK ||
            (rc = map_ring(s, ci, fd, diag)) != TROVE_OK)
            goto out;
    }
    s->st.threads = 1;
    if (write(go[1], "g", 1) != 1) {
        rc = TROVE_FAIL(diag, -errno, 0, "starting the command: %s", strerror(errno));
        goto out;
    }
    close(go[1]);
    go[1] = -1;
    do
        n = read(err[0], &e, sizeof e);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof e) {
        rc = TROVE_FAIL(diag, -e, 0, "cannot run %s: %s", argv[0], strerror(e));
        goto out;
    }
    rc = TROVE_OK;
out:
    if (go[0] >= 0)
        close(go[0]);
    if (go[1] >= 0)
        close(go[1]); /* before the exec: the child sees the pipe end and exits */
    if (err[0] >= 0)
        close(err[0]);
    if (err[1] >= 0)
        close(err[1]);
    if (rc != TROVE_OK) {
        trove_sampler_free(s);
        return rc;
    }
    *out = s;
    return TROVE_OK;
}

/* ---- attach ---------------------------------------------------------------------------- */

static int tid_known(const struct trove_sampler *s, uint32_t tid)
{
    for (size_t i = 0; i < s->n_tids; i++)
        if (s->tids[i] == tid)
            return 1;
    return 0;
}

/* Open the events of thread tid on every CPU, into the CPUs' rings. 0, 1 if the thread is
 * gone, or an error. */
static int attach_thread(struct trove_sampler *s, uint32_t tid, struct trove_diag *diag)
{
    char what[64];
    int rc;
    snprintf(what, sizeof what, "thread %" PRIu32 " of pid %d", tid, (int)s->pid);
    for (size_t ci = 0; ci < s->ncpu; ci++) {
        int fd;
        if ((rc = open_one(s, (pid_t)tid, ci, what, &fd, diag)) != TROVE_OK)
            return rc == -ESRCH ? 1 : rc;
        if (s->ring[ci].fd < 0) {
            if ((rc = map_ring(s, ci, fd, diag)) != TROVE_OK)
                return rc;
        } else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, s->ring[ci].fd) != 0) {
            return TROVE_FAIL(diag, -errno, 0, "sharing the ring of CPU %d with %s: %s",
                              s->cpu[ci], what, strerror(errno));
        }
    }
    if (s->n_tids == s->cap_tids) {
        size_t cap = s->cap_tids ? s->cap_tids * 2 : 16;
        uint32_t *q = trove__realloc(s->tids, cap * sizeof *q);
        if (!q)
            return TROVE_FAIL(diag, TROVE_ERR_NOMEM, 0, "out of memory");
        s->tids = q;
        s->cap_tids = cap;
    }
    s->tids[s->n_tids++] = tid;
    return 0;
}

int trove_sampler_attach(const struct trove_sample_options *o, uint32_t pid,
                         struct trove_sample_set *set, struct trove_sampler **out,
                         struct trove_diag *diag)
{
    struct trove_sampler *s = NULL;
    uint32_t *tids = NULL;
    size_t n = 0;
    int rc, added = 1;

    if (!out || pid == 0 || pid > INT32_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no process to sample");
    *out = NULL;
    if ((rc = new_sampler(o, set, &s, diag)) != TROVE_OK)
        return rc;
    s->pid = (pid_t)pid;
    if ((rc = trove__proc_maps_load(pid, set, trove__recorder_spaces(s->rec),
                                    &trove__recorder_stats(s->rec)->mmaps)) != TROVE_OK) {
        if (rc == -ENOENT || rc == -ESRCH)
            rc = TROVE_FAIL(diag, -ESRCH, 0, "no process %" PRIu32, pid);
        else if (rc == -EACCES || rc == -EPERM)
            rc = TROVE_FAIL(diag, rc, 0,
                            "reading /proc/%" PRIu32 "/maps: %s (is the process yours?)", pid,
                            strerror(-rc));
        else
            rc = TROVE_FAIL(diag, rc, 0, "reading /proc/%" PRIu32 "/maps: %s", pid,
                            trove_strerror(rc));
        goto out;
    }
    for (int round = 0; added && round < MAX_ATTACH_ROUNDS; round++) {
        added = 0;
        free(tids);
        tids = NULL;
        if ((rc = trove__proc_tasks(pid, &tids, &n)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc == -ENOENT ? -ESRCH : rc, 0, "listing the threads of %" PRIu32
                            ": %s", pid, rc == -ENOENT ? "no such process" : trove_strerror(rc));
            goto out;
        }
        for (size_t i = 0; i < n; i++) {
            char comm[64];
            if (tid_known(s, tids[i]))
                continue;
            if ((rc = attach_thread(s, tids[i], diag)) < 0)
                goto out;
            if (rc == 0) {
                added = 1;
                if (trove__proc_comm(pid, tids[i], comm, sizeof comm) == 0)
                    trove__recorder_name(s->rec, pid, tids[i], comm);
            }
        }
    }
    if (!s->n_tids) {
        rc = TROVE_FAIL(diag, -ESRCH, 0, "process %" PRIu32 " has no threads left", pid);
        goto out;
    }
    s->st.threads = (uint32_t)s->n_tids;
    s->pidfd = pidfd_of(s->pid);
    rc = TROVE_OK;
out:
    free(tids);
    if (rc != TROVE_OK) {
        trove_sampler_free(s);
        return rc;
    }
    *out = s;
    return TROVE_OK;
}

/* ---- reading the rings ----------------------------------------------------------------- */

/* Read every ring into the set: heads read with acquire, tails given back with release
 * once the records are copied and applied. */
static int drain(struct trove_sampler *s, struct trove_diag *diag)
{
    int rc;
    for (size_t ci = 0; ci < s->ncpu; ci++) {
        struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)(void *)s->ring[ci].base;
        if (!pg) {
            s->rr[ci] = (struct trove__perf_ring){NULL, 8, 0, 0};
            continue;
        }
        s->rr[ci].data = s->ring[ci].base + s->page;
        s->rr[ci].size = s->ring[ci].data_size;
        s->rr[ci].head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
        s->rr[ci].tail = pg->data_tail;
    }
    rc = trove__recorder_read(s->rec, s->rr, s->ncpu);
    for (size_t ci = 0; ci < s->ncpu; ci++) {
        struct perf_event_mmap_page *pg = (struct perf_event_mmap_page *)(void *)s->ring[ci].base;
        if (pg)
            __atomic_store_n(&pg->data_tail, s->rr[ci].tail, __ATOMIC_RELEASE);
    }
    if (rc != TROVE_OK)
        s->err = TROVE_FAIL(diag, rc, 0, "reading the samples: %s", trove_strerror(rc));
    return rc;
}

int trove_sampler_poll(struct trove_sampler *s, int timeout_ms, struct trove_diag *diag)
{
    nfds_t n = 0;
    int rc;

    if (!s)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no sampler");
    if (s->err)
        return TROVE_FAIL(diag, s->err, 0, "the sampler failed before: %s", trove_strerror(s->err));
    if (s->ended)
        return 0;
    /* A ring whose owner's task has exited polls as POLLHUP for ever, though the other
     * threads' events may still write into it: it is then read on the timeout alone. */
    for (size_t ci = 0; ci < s->ncpu && !s->stopped; ci++)
        if (s->ring[ci].fd >= 0 && !s->ring[ci].hup) {
            s->pfd_ring[n] = ci;
            s->pfd[n++] = (struct pollfd){s->ring[ci].fd, POLLIN, 0};
        }
    if (s->pidfd >= 0) {
        s->pfd_ring[n] = SIZE_MAX;
        s->pfd[n++] = (struct pollfd){s->pidfd, POLLIN, 0};
    }
    if (n == 0) {
        struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    } else if (poll(s->pfd, n, timeout_ms) < 0) {
        if (errno != EINTR) {
            s->err = TROVE_FAIL(diag, -errno, 0, "poll: %s", strerror(errno));
            return s->err;
        }
    } else {
        for (nfds_t i = 0; i < n; i++)
            if (s->pfd_ring[i] != SIZE_MAX && (s->pfd[i].revents & (POLLHUP | POLLERR)))
                s->ring[s->pfd_ring[i]].hup = 1;
    }
    if ((rc = drain(s, diag)) != TROVE_OK)
        return rc;
    if (s->spawned) {
        pid_t w = waitpid(s->pid, &s->status, WNOHANG);
        if (w == s->pid || (w < 0 && errno == ECHILD))
            s->ended = 1;
    } else if (!trove__proc_alive((uint32_t)s->pid)) {
        s->ended = 1;
    }
    if (s->ended) /* what its last moments left in the rings */
        return (rc = drain(s, diag)) != TROVE_OK ? rc : 0;
    return 1;
}

int trove_sampler_stop(struct trove_sampler *s, struct trove_diag *diag)
{
    if (!s)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no sampler");
    if (!s->stopped) {
        for (size_t i = 0; i < s->n_fds; i++)
            ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
        s->stopped = 1;
        if (!s->err)
            drain(s, diag);
    }
    return s->err;
}

int trove_sampler_end_command(struct trove_sampler *s, int sig, int grace_ms, int *status_out)
{
    if (!s || !s->spawned)
        return 0;
    if (!s->ended) {
        pid_t w = waitpid(s->pid, &s->status, WNOHANG);
        if (w == 0) {
            kill(s->pid, sig);
            for (int waited = 0; waited < grace_ms && w == 0; waited += 10) {
                struct timespec ts = {0, 10000000L};
                nanosleep(&ts, NULL);
                w = waitpid(s->pid, &s->status, WNOHANG);
            }
            if (w == 0) {
                kill(s->pid, SIGKILL);
                while ((w = waitpid(s->pid, &s->status, 0)) < 0 && errno == EINTR)
                    ;
            }
        }
        s->ended = 1;
    }
    if (status_out)
        *status_out = s->status;
    return 1;
}

uint32_t trove_sampler_pid(const struct trove_sampler *s) { return s ? (uint32_t)s->pid : 0; }

void trove_sampler_stats(const struct trove_sampler *s, struct trove_sampler_stats *out)
{
    *out = *trove__recorder_stats(s->rec);
    out->event = s->event;
    out->hz = s->st.hz;
    out->cpus = s->st.cpus;
    out->ring_pages = s->st.ring_pages;
    out->threads = s->st.threads;
}

void trove_sampler_free(struct trove_sampler *s)
{
    if (!s)
        return;
    if (s->spawned && s->pid > 0 && !s->ended) {
        kill(s->pid, SIGKILL);
        while (waitpid(s->pid, &s->status, 0) < 0 && errno == EINTR)
            ;
    }
    for (size_t ci = 0; s->ring && ci < s->ncpu; ci++)
        if (s->ring[ci].base)
            munmap(s->ring[ci].base, s->ring[ci].map_len);
    for (size_t i = 0; i < s->n_fds; i++)
        close(s->fds[i]);
    if (s->pidfd >= 0)
        close(s->pidfd);
    trove__recorder_free(s->rec);
    free(s->cpu);
    free(s->ring);
    free(s->pfd);
    free(s->pfd_ring);
    free(s->fds);
    free(s->tids);
    free(s->rr);
    free(s);
}
