/*
 * trove/sample.h: sampling the call stacks of a process with perf_event_open, and turning
 * them into a symbolized profile (trove/profile.h) with elfutils' libdw. docs/sampling.md
 * says how to use it and what it needs from the kernel.
 *
 * Three objects, in the order data flows through them:
 *
 *   trove_sampler     samples a command it starts (trove_sampler_spawn) or a running
 *                     process (trove_sampler_attach): every thread, now and later, at a
 *                     frequency, with its user-space call chain (frame pointers), and the
 *                     context switches; it follows the process's mappings (PERF_RECORD_MMAP2
 *                     and /proc/PID/maps) so that each address is resolved to a module and
 *                     an offset in it while the mapping is known — a command's mappings are
 *                     gone once it exits, the sample set keeps what they were.
 *   trove_sample_set  what sampling gathered: the modules (path, build id), the samples as
 *                     (module, offset) frames, the context switches, thread and process
 *                     names. Plain data: a test or a benchmark can fill one by hand.
 *   trove_symbolizer  module + offset -> function, source file, line, with inlined frames
 *                     expanded, from the module's ELF symbols and DWARF (or its separate
 *                     debug file); each module (by build id) is opened once and each address
 *                     resolved once per symbolizer.
 *
 * trove_sample_profile puts a sample set through a symbolizer into a profile.
 *
 * Clock: sample times are CLOCK_MONOTONIC nanoseconds (the events' use_clockid), the clock
 * trove's instrumentation library and `trove serve` stamp events with, so samples and zones
 * of one machine share a timeline.
 *
 * Errors: a kernel that refuses perf_event_open (EACCES or EPERM: kernel.perf_event_paranoid
 * or a missing capability; ENOSYS or EPERM from a container's seccomp filter; ENOENT or
 * EOPNOTSUPP for an event it lacks) comes back as -errno with a diag that says which and
 * what to do; trove_sample_refused() tells the refusals from the failures. Thread-safety:
 * each object is used by one thread at a time.
 */
#ifndef TROVE_SAMPLE_H
#define TROVE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/event.h"
#include "trove/profile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- options ------------------------------------------------------------------------- */

/* What the kernel counts between samples. */
enum trove_sample_event {
    TROVE_SAMPLE_EVENT_AUTO = 0,       /* cycles where the machine has them, else task-clock */
    TROVE_SAMPLE_EVENT_TASK_CLOCK = 1, /* CPU time of the thread (software; works in VMs) */
    TROVE_SAMPLE_EVENT_CYCLES = 2      /* CPU cycles (needs a PMU) */
};

/* "auto", "task-clock", "cycles"; NULL for another value. */
const char *trove_sample_event_name(int event);

#define TROVE_SAMPLE_HZ_DEFAULT 999u
/* Frames kept per sample: the kernel's own default limit (kernel.perf_event_max_stack). */
#define TROVE_SAMPLE_MAX_FRAMES 127u
/* The data area of each CPU's ring, in pages, by default (256 KiB), and at most. */
#define TROVE_SAMPLE_RING_PAGES_DEFAULT 64u
#define TROVE_SAMPLE_RING_PAGES_MAX 4096u

/* A zeroed struct means every default; so does any field left 0. */
struct trove_sample_options {
    uint32_t hz;         /* samples a second of each thread's time on a CPU, 1 .. 100000 */
    int event;           /* enum trove_sample_event */
    uint32_t ring_pages; /* a power of two, 1 .. TROVE_SAMPLE_RING_PAGES_MAX; halved while
                            the kernel's locked-memory limit refuses it */
};

/* The defaults, explicitly: hz 999, event auto, ring_pages TROVE_SAMPLE_RING_PAGES_DEFAULT. */
void trove_sample_defaults(struct trove_sample_options *o);

/* Is rc (from trove_sampler_spawn or _attach) the kernel refusing to sample — not allowed
 * (EACCES, EPERM), or no perf_event_open at all (ENOSYS) — rather than a failure? 1 or 0. */
int trove_sample_refused(int rc);

/* ---- the sample set ------------------------------------------------------------------ */

/* A frame's module when its address was in no known mapping: offset is then the address. */
#define TROVE_SAMPLE_NO_MODULE UINT32_MAX
#define TROVE_SAMPLE_BUILD_ID_MAX 64u

/* A file (or the kernel's [vdso]) mapped into a sampled process. */
struct trove_sample_module {
    const char *path;        /* as mapped, e.g. "/usr/lib/x86_64-linux-gnu/libc.so.6" */
    const uint8_t *build_id; /* its GNU build id (build_id_len bytes; 0 if none known) */
    size_t build_id_len;
};

/* One frame of a sample: an address as (module, offset in the module's file). */
struct trove_sample_frame {
    uint32_t module; /* a module of the set, or TROVE_SAMPLE_NO_MODULE */
    uint64_t offset; /* file offset (address - mapping start + mapping file offset) */
};

/* A sample: its frames leaf first. frames[0] is the sampled instruction; the others are
 * return addresses (the instruction after each call). */
struct trove_sample {
    uint64_t time_ns;
    uint32_t pid, tid;
    uint32_t n_frames;
    const struct trove_sample_frame *frames;
};

/* A context switch of a sampled thread: out (it left its CPU; preempt: it was runnable) or
 * in (it came back). */
struct trove_sample_switch {
    uint64_t time_ns;
    uint32_t pid, tid;
    uint8_t out;
    uint8_t preempt;
    uint8_t pad[6];
};

struct trove_sample_set;

/* A new empty set. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_sample_set_new(struct trove_sample_set **out);
void trove_sample_set_free(struct trove_sample_set *s);

/*
 * The id of the module (path, build_id[0..build_id_len)), added if the set has no module
 * with that path and build id. path is copied (at most 4095 bytes, no NUL inside).
 * Errors: TROVE_ERR_INVALID, TROVE_ERR_LIMIT (build_id_len over TROVE_SAMPLE_BUILD_ID_MAX),
 * TROVE_ERR_NOMEM; the set is then as it was.
 */
int trove_sample_set_module(struct trove_sample_set *s, const char *path, const uint8_t *build_id,
                            size_t build_id_len, uint32_t *id_out);
size_t trove_sample_set_module_count(const struct trove_sample_set *s);
/* Module id's fields, valid until the set is freed; TROVE_ERR_INVALID for an unknown id. */
int trove_sample_set_module_get(const struct trove_sample_set *s, uint32_t id,
                                struct trove_sample_module *out);

/* Add a sample (frames[0..n) copied, n at most TROVE_SAMPLE_MAX_FRAMES, each module known or
 * TROVE_SAMPLE_NO_MODULE). Errors: TROVE_ERR_INVALID, TROVE_ERR_LIMIT, TROVE_ERR_NOMEM. */
int trove_sample_set_add(struct trove_sample_set *s, uint64_t time_ns, uint32_t pid, uint32_t tid,
                         const struct trove_sample_frame *frames, size_t n);
size_t trove_sample_set_count(const struct trove_sample_set *s);
/* Sample i (< count), in the order added; its frames live until the set is freed. */
void trove_sample_set_get(const struct trove_sample_set *s, size_t i, struct trove_sample *out);

/* Add a context switch. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_sample_set_add_switch(struct trove_sample_set *s, const struct trove_sample_switch *sw);
/* The switches in the order added, and their count in *n_out. */
const struct trove_sample_switch *trove_sample_set_switches(const struct trove_sample_set *s,
                                                            size_t *n_out);

/* The set's thread names (TROVE_NAME_THREAD, from the threads' comm) and process names
 * (TROVE_NAME_PROCESS): the set owns it; add to it freely. */
struct trove_names *trove_sample_set_names(struct trove_sample_set *s);

/* ---- the sampler --------------------------------------------------------------------- */

struct trove_sampler;

/*
 * Start argv[0] (found on PATH as execvp does) with arguments argv (NULL-terminated) and
 * sample it and every thread and child process it starts, from its exec on. The command
 * inherits trove's standard streams, environment and working directory. What is sampled
 * goes into set (which must outlive the sampler). Errors: TROVE_ERR_INVALID; -errno of
 * perf_event_open, mmap or fork, with diag naming the cause (trove_sample_refused tells a
 * refusal); TROVE_ERR_LIMIT when even a one-page ring is over the locked-memory limit;
 * -errno of the exec ("no such command": -ENOENT) — in every case no command is left
 * running.
 */
int trove_sampler_spawn(const struct trove_sample_options *o, char *const argv[],
                        struct trove_sample_set *set, struct trove_sampler **out,
                        struct trove_diag *diag);

/*
 * Sample the running process pid: each of its threads now, and the threads they start from
 * now on; its mappings are read from /proc/PID/maps first. Errors: TROVE_ERR_INVALID,
 * -ESRCH (no such process), the errors of trove_sampler_spawn but the exec's.
 */
int trove_sampler_attach(const struct trove_sample_options *o, uint32_t pid,
                         struct trove_sample_set *set, struct trove_sampler **out,
                         struct trove_diag *diag);

/*
 * Wait up to timeout_ms for records and read every ring into the set. Returns 1 while the
 * target runs, 0 once it has ended (a spawned command exited and was reaped — its status:
 * trove_sampler_status — or an attached process is gone) and everything it left was read,
 * or an error: -errno of poll, TROVE_ERR_NOMEM; errors are sticky. Interrupted by a signal,
 * it returns 1 early.
 */
int trove_sampler_poll(struct trove_sampler *s, int timeout_ms, struct trove_diag *diag);

/* Stop sampling (the target runs on) and read what is left. TROVE_OK or the sticky error. */
int trove_sampler_stop(struct trove_sampler *s, struct trove_diag *diag);

/*
 * A spawned command that still runs gets signal sig, then after grace_ms SIGKILL, and is
 * reaped. 1 with its wait status in *status_out once it has ended (now or before), 0 for an
 * attached process (never signalled).
 */
int trove_sampler_end_command(struct trove_sampler *s, int sig, int grace_ms, int *status_out);

/* The sampled process (the command's pid for a spawn). */
uint32_t trove_sampler_pid(const struct trove_sampler *s);

/* What a sampler counted. */
struct trove_sampler_stats {
    int event;             /* enum trove_sample_event that was opened */
    uint32_t hz;
    uint32_t cpus;         /* rings, one per online CPU */
    uint32_t ring_pages;   /* data pages of each ring, as mapped */
    uint32_t threads;      /* threads attached one by one (attach); 1 for a spawn */
    uint64_t samples;      /* samples read */
    uint64_t switches;     /* context switches read */
    uint64_t mmaps;        /* mappings learnt (records and /proc/PID/maps lines) */
    uint64_t lost;         /* records the kernel dropped (PERF_RECORD_LOST) */
    uint64_t lost_samples; /* samples the kernel dropped (PERF_RECORD_LOST_SAMPLES) */
    uint64_t throttled;    /* times the kernel throttled the sampling rate */
    uint64_t bad_records;  /* records that failed their checks (skipped) */
    uint64_t bad_rings;    /* times a ring was unreadable and dropped */
    uint64_t unmapped;     /* frames in no known mapping (kept as addresses) */
    uint64_t truncated;    /* samples whose callchain was cut at TROVE_SAMPLE_MAX_FRAMES */
};
void trove_sampler_stats(const struct trove_sampler *s, struct trove_sampler_stats *out);

/* Free the sampler: stop it, and kill and reap a spawned command that still runs (NULL is
 * fine). The set stays the caller's. */
void trove_sampler_free(struct trove_sampler *s);

/* ---- the symbolizer ------------------------------------------------------------------ */

/* One function of an address, innermost first: the function inlined deepest, then the
 * functions it was inlined into, then the function compiled there (inline_depth 0). */
struct trove_symbol {
    const char *function; /* NULL when unknown */
    const char *file;     /* the source file, NULL when unknown */
    uint32_t line;        /* 0 when unknown */
    uint32_t inline_depth;
};

struct trove_symbolizer;

/* A new symbolizer (opens nothing yet). Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_symbolizer_new(struct trove_symbolizer **out);
/* Free it and every module it opened (NULL is fine); strings it returned die with it. */
void trove_symbolizer_free(struct trove_symbolizer *sym);

/*
 * The functions at file offset `offset` of the module m, innermost first, into
 * out[0..cap): *n_out gets how many (at most cap; 0: the address is in the module but no
 * symbol covers it, or the module cannot be read or has another build id than m's — it is
 * then kept as module + offset). The module's ELF file (path) is opened once per build id
 * (or per path, when it has none) for the symbolizer's life, with its separate debug file
 * if one is installed (/usr/lib/debug/.build-id/...). Strings live until the symbolizer is
 * freed. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM (a module that cannot be opened is not
 * an error).
 */
int trove_symbolizer_lookup(struct trove_symbolizer *sym, const struct trove_sample_module *m,
                            uint64_t offset, struct trove_symbol *out, size_t cap, size_t *n_out);

/* What a symbolizer has done, for benchmarks and --json. */
struct trove_symbolizer_stats {
    uint64_t modules;   /* modules opened (each build id once) */
    uint64_t unreadable; /* of those, the ones without symbols, or unreadable, or another build */
    uint64_t lookups;   /* trove_symbolizer_lookup calls */
    uint64_t resolved;  /* distinct addresses resolved through libdw (the others were cached) */
};
void trove_symbolizer_stats(const struct trove_symbolizer *sym, struct trove_symbolizer_stats *out);

/* ---- the profile --------------------------------------------------------------------- */

/*
 * Symbolize every sample of set into profile p (which may hold rows already): its frames
 * (each distinct module + offset looked up once, inlined frames expanded, unsymbolized
 * addresses as "module+0xOFFSET"; callers' return addresses looked up one byte back, inside
 * the call), its stack (trove_profile_stack_path) and a sample row, in time order (samples
 * of equal time in the order added). Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM,
 * TROVE_ERR_LIMIT; p then holds what was added before the failure.
 */
int trove_sample_profile(struct trove_symbolizer *sym, const struct trove_sample_set *set,
                         struct trove_profile *p);

/* The same for the samples from index first_sample on and the switches from first_switch
 * on (the ones a live recording has not sent yet): p gains their rows, the frames and stacks
 * it has already reused. */
int trove_sample_profile_since(struct trove_symbolizer *sym, const struct trove_sample_set *set,
                               size_t first_sample, size_t first_switch, struct trove_profile *p);

#ifdef __cplusplus
}
#endif
#endif
