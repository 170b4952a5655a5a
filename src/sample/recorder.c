/*
 * recorder.c: the records of the rings, applied in time order (recorder.h).
 *
 * The rings are per CPU, so one ring's records are in time order but two rings' are not,
 * and what one thread does on one CPU (map a library) must be applied before its samples
 * on another. So each read copies every whole record out of every ring into one buffer
 * (perf_records.c checks each ring and record), sorts the copies by time (ties keep ring
 * order), then applies them: a mapping goes into its process's space (spaces.c), a fork
 * copies the space, an exec empties it, and a sample's addresses become (module, file
 * offset) at once, while the mappings they fall in are known. Records are only ever
 * applied in the read they arrive in; a record that arrives a read late would be applied
 * late, but the kernel writes a mapping's record before mmap returns, so before any sample
 * can run its code.
 *
 * A sample's leaf address that no mapping holds (a mapping made between the maps read and
 * the events, or records the kernel dropped) makes the recorder read /proc/PID/maps again,
 * once per read and process, while the process lives. Callers' addresses outside every
 * mapping are not a reason: code without frame pointers (glibc) leaves junk in the chain.
 * Modules of mapping records without a build id (a kernel before 5.12) are found again by
 * their device and inode, so a library mapped by many processes is read once.
 */
#include "recorder.h"
#include "common/alloc.h"
#include "common/utf8.h"
#include "proc_maps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A record copied out of a ring, waiting for its turn in time order. */
struct pending {
    uint64_t time_ns;
    uint64_t seq; /* the order read: ties keep it */
    size_t off;   /* in the buffer */
    size_t len;
};

/* A file a mapping record named by device and inode: the module it became. */
struct file_id {
    uint32_t module, maj, min;
    uint64_t ino;
};

struct trove__recorder {
    struct trove_sample_set *set;
    struct trove__spaces *sp;
    struct trove_sampler_stats st;
    int offline;
    uint32_t reread_pid; /* the pid whose maps this read loaded again (0: none) */
    uint8_t *scratch;
    struct trove_bytes buf;
    struct pending *pend;
    size_t n_pend, cap_pend;
    uint64_t seq;
    struct file_id *files;
    size_t n_files, cap_files;
    struct trove_sample_frame frames[TROVE_SAMPLE_MAX_FRAMES];
};

int trove__recorder_new(struct trove_sample_set *set, struct trove__recorder **out)
{
    struct trove__recorder *r = trove__calloc(1, sizeof *r);
    if (!r)
        return TROVE_ERR_NOMEM;
    r->set = set;
    if (trove__spaces_new(&r->sp) != TROVE_OK ||
        !(r->scratch = trove__malloc(TROVE__PERF_RECORD_MAX))) {
        trove__recorder_free(r);
        return TROVE_ERR_NOMEM;
    }
    *out = r;
    return TROVE_OK;
}

void trove__recorder_free(struct trove__recorder *r)
{
    if (!r)
        return;
    trove__spaces_free(r->sp);
    free(r->scratch);
    trove_bytes_free(&r->buf);
    free(r->pend);
    free(r->files);
    free(r);
}

struct trove__spaces *trove__recorder_spaces(struct trove__recorder *r) { return r->sp; }

void trove__recorder_offline(struct trove__recorder *r, int on) { r->offline = on; }

struct trove_sampler_stats *trove__recorder_stats(struct trove__recorder *r) { return &r->st; }

void trove__recorder_name(struct trove__recorder *r, uint32_t pid, uint32_t tid, const char *comm)
{
    struct trove_names *names = trove_sample_set_names(r->set);
    char name[64];
    size_t len = 0;
    /* A comm is whatever bytes the program set (prctl PR_SET_NAME), and names are UTF-8:
     * each byte of a sequence that is not valid becomes '?'. */
    for (size_t at = 0; comm[at] && len < sizeof name - 1;) {
        size_t rest = strnlen(comm + at, sizeof name - 1 - len);
        size_t ok = trove__utf8_valid_prefix((const uint8_t *)comm + at, rest);
        memcpy(name + len, comm + at, ok);
        len += ok;
        at += ok;
        if (comm[at] && len < sizeof name - 1) {
            name[len++] = '?';
            at++;
        }
    }
    /* Names are best effort: a thread without one is still sampled. */
    (void)trove_names_set(names, TROVE_NAME_THREAD, pid, tid, name, len);
    if (pid == tid)
        (void)trove_names_set(names, TROVE_NAME_PROCESS, pid, 0, name, len);
}

/* The time a record carries, for the sort (its decode checks it later). */
static uint64_t peek_time(const uint8_t *rec, size_t len)
{
    uint32_t type;
    uint64_t t = 0;
    if (len < 24)
        return 0;
    memcpy(&type, rec, 4);
    if (type == PERF_RECORD_SAMPLE)
        memcpy(&t, rec + 16, 8);
    else
        memcpy(&t, rec + len - 8, 8);
    return t;
}

static int pend_cmp(const void *x, const void *y)
{
    const struct pending *a = x, *b = y;
    if (a->time_ns != b->time_ns)
        return a->time_ns < b->time_ns ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* The module of a mapping record. */
static int record_module(struct trove__recorder *r, const struct trove__perf_rec *m,
                         uint32_t *module)
{
    uint8_t bid[TROVE_SAMPLE_BUILD_ID_MAX];
    size_t bid_len = 0;
    char path[4200];
    int rc;
    if (m->build_id_len)
        return trove_sample_set_module(r->set, m->filename, m->build_id, m->build_id_len, module);
    for (size_t i = r->n_files; m->ino && i-- > 0;) {
        struct trove_sample_module mm;
        const struct file_id *f = &r->files[i];
        if (f->ino == m->ino && f->maj == m->maj && f->min == m->min &&
            trove_sample_set_module_get(r->set, f->module, &mm) == TROVE_OK &&
            !strcmp(mm.path, m->filename)) {
            *module = f->module;
            return TROVE_OK;
        }
    }
    if (m->filename[0] == '/' && !r->offline) {
        snprintf(path, sizeof path, "/proc/%u/root%s", (unsigned)m->pid, m->filename);
        if (!(bid_len = trove__elf_build_id(path, bid, sizeof bid)))
            bid_len = trove__elf_build_id(m->filename, bid, sizeof bid);
    }
    if ((rc = trove_sample_set_module(r->set, m->filename, bid, bid_len, module)) != TROVE_OK)
        return rc;
    if (m->ino) {
        if (r->n_files == r->cap_files) {
            size_t cap = r->cap_files ? r->cap_files * 2 : 32;
            struct file_id *q = trove__realloc(r->files, cap * sizeof *q);
            if (!q)
                return TROVE_ERR_NOMEM;
            r->files = q;
            r->cap_files = cap;
        }
        r->files[r->n_files++] = (struct file_id){*module, m->maj, m->min, m->ino};
    }
    return TROVE_OK;
}

static int on_mmap(struct trove__recorder *r, const struct trove__perf_rec *m)
{
    uint32_t module;
    int rc;
    if (!trove__maps_is_module("--x-", m->filename, strlen(m->filename)))
        return TROVE_OK; /* anonymous executable memory (a JIT), [vsyscall]: no module */
    if ((rc = record_module(r, m, &module)) != TROVE_OK ||
        (rc = trove__spaces_map(r->sp, m->pid, m->addr, m->addr + m->len, m->pgoff, module)) !=
            TROVE_OK)
        return rc == TROVE_ERR_LIMIT ? TROVE_OK : rc;
    r->st.mmaps++;
    return TROVE_OK;
}

static int on_sample(struct trove__recorder *r, const struct trove__perf_rec *s)
{
    size_t n = 0;
    int user = 1;
    r->st.samples++;
    for (uint64_t i = 0; i < s->nr; i++) {
        uint64_t ip = trove__perf_ip(s, i);
        if (ip >= (uint64_t)PERF_CONTEXT_MAX) { /* a context marker: whose frames follow */
            user = ip == (uint64_t)PERF_CONTEXT_USER;
            continue;
        }
        if (!user)
            continue;
        if (n == TROVE_SAMPLE_MAX_FRAMES) {
            r->st.truncated++;
            break;
        }
        if (!trove__spaces_find(r->sp, s->pid, ip, &r->frames[n])) {
            uint64_t added = 0;
            if (n == 0 && !r->offline && r->reread_pid != s->pid && trove__proc_alive(s->pid)) {
                int rc;
                r->reread_pid = s->pid;
                rc = trove__proc_maps_load(s->pid, r->set, r->sp, &added);
                if (rc == TROVE_ERR_NOMEM)
                    return rc;
                r->st.mmaps += added;
            }
            if (!added || !trove__spaces_find(r->sp, s->pid, ip, &r->frames[n])) {
                r->frames[n] = (struct trove_sample_frame){TROVE_SAMPLE_NO_MODULE, ip};
                r->st.unmapped++;
            }
        }
        n++;
    }
    return trove_sample_set_add(r->set, s->time_ns, s->pid, s->tid, r->frames, n);
}

static int apply(struct trove__recorder *r, const struct trove__perf_rec *m)
{
    struct trove_sample_switch sw;
    switch (m->type) {
    case PERF_RECORD_SAMPLE:
        return on_sample(r, m);
    case PERF_RECORD_MMAP:
    case PERF_RECORD_MMAP2:
        return on_mmap(r, m);
    case PERF_RECORD_COMM:
        if (m->misc & PERF_RECORD_MISC_COMM_EXEC)
            trove__spaces_exec(r->sp, m->pid);
        trove__recorder_name(r, m->pid, m->tid, m->comm);
        return TROVE_OK;
    case PERF_RECORD_FORK: {
        /* A new thread or process has its creator's comm until it sets its own (a COMM
         * record then): the kernel sends no COMM for the copy. */
        size_t len = 0;
        const char *name = trove_names_get(trove_sample_set_names(r->set), TROVE_NAME_THREAD,
                                           m->ppid, m->ptid, &len);
        if (name && len < 64) {
            char comm[64];
            memcpy(comm, name, len);
            comm[len] = 0;
            trove__recorder_name(r, m->pid, m->tid, comm);
        }
        return m->pid != m->ppid ? trove__spaces_fork(r->sp, m->ppid, m->pid) : TROVE_OK;
    }
    case PERF_RECORD_SWITCH:
        memset(&sw, 0, sizeof sw);
        sw.time_ns = m->time_ns;
        sw.pid = m->pid;
        sw.tid = m->tid;
        sw.out = (m->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
        sw.preempt = (m->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
        r->st.switches++;
        return trove_sample_set_add_switch(r->set, &sw);
    case PERF_RECORD_LOST:
        r->st.lost += m->lost;
        return TROVE_OK;
    case PERF_RECORD_LOST_SAMPLES:
        r->st.lost_samples += m->lost;
        return TROVE_OK;
    case PERF_RECORD_THROTTLE:
        r->st.throttled++;
        return TROVE_OK;
    default:
        return TROVE_OK;
    }
}

int trove__recorder_read(struct trove__recorder *r, struct trove__perf_ring *rings, size_t n)
{
    int rc = TROVE_OK;
    r->buf.len = 0;
    r->n_pend = 0;
    r->reread_pid = 0;
    for (size_t ci = 0; ci < n; ci++) {
        const uint8_t *rec;
        size_t len;
        int k;
        while ((k = trove__perf_ring_next(&rings[ci], r->scratch, &rec, &len, NULL)) == 1) {
            if (rc != TROVE_OK)
                continue; /* out of memory: the rest is dropped, the rings still emptied */
            if (trove_bytes_reserve(&r->buf, len) != TROVE_OK) {
                rc = TROVE_ERR_NOMEM;
                continue;
            }
            if (r->n_pend == r->cap_pend) {
                size_t cap = r->cap_pend ? r->cap_pend * 2 : 1024;
                struct pending *q = trove__realloc(r->pend, cap * sizeof *q);
                if (!q) {
                    rc = TROVE_ERR_NOMEM;
                    continue;
                }
                r->pend = q;
                r->cap_pend = cap;
            }
            r->pend[r->n_pend++] = (struct pending){peek_time(rec, len), r->seq++, r->buf.len, len};
            memcpy(r->buf.ptr + r->buf.len, rec, len);
            r->buf.len += len;
        }
        if (k < 0)
            r->st.bad_rings++;
    }
    if (rc != TROVE_OK)
        return rc;
    if (r->n_pend > 1)
        qsort(r->pend, r->n_pend, sizeof *r->pend, pend_cmp);
    for (size_t i = 0; i < r->n_pend; i++) {
        struct trove__perf_rec m;
        if (trove__perf_decode(r->buf.ptr + r->pend[i].off, r->pend[i].len, &m, NULL) !=
            TROVE_OK) {
            r->st.bad_records++;
            continue;
        }
        if ((rc = apply(r, &m)) != TROVE_OK)
            return rc;
    }
    return TROVE_OK;
}
