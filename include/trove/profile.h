/*
 * trove/profile.h: a sampling profile in memory — the deduplicated frames, stacks and
 * samples that trove's sampler makes (trove/sample.h) and that the bundle's samples and
 * frames tables and the wire's samples frame will carry.
 *
 * The model, three tables and a string table, every row referring to rows before it:
 *
 *   strings  id -> UTF-8 bytes. Id 0 is always "", so an unknown file is file 0.
 *
 *   frames   frame_id (0 ..)  module, function, file (string ids), line (0: unknown),
 *            address, inline_depth.
 *            One row per distinct frame: two rows never have the same module, address
 *            and inline_depth (function, file and line follow from those three).
 *            address is where the instruction lies in its module: the offset in the
 *            module's file (the ELF file offset, as a mapping's pgoff counts it), so that
 *            the frame is the same in every process and at every load address; for an
 *            address in no known module (module "[unknown]") it is the virtual address.
 *            For the sampled instruction (the leaf) it is the instruction itself; for a
 *            caller it is its return address minus one, which lies inside the call
 *            instruction and so names the calling line. inline_depth: 0 for the function the
 *            instruction is compiled in (a real frame on the machine stack), k > 0 for a
 *            function inlined k levels into it: one address expands into inline_depth 0, 1,
 *            ..., d frames, the innermost (deepest) nearest the leaf. A frame that could not
 *            be symbolized has function "MODULE+0xOFFSET" (MODULE the file's base name) and
 *            file 0.
 *
 *   stacks   stack_id (1 ..)  frame, parent (a stack_id, 0 for none).
 *            A trie of call paths: stack s is frame `frame` called from stack `parent`,
 *            the outermost frame being a stack whose parent is 0. Stack 0 is the empty
 *            stack (no row). One row per distinct (parent, frame), and parent < stack_id,
 *            so a walk from a stack to its root only goes down in ids and a reader that
 *            sees rows in order has every parent before its children.
 *
 *   samples  time_ns (CLOCK_MONOTONIC, the clock of trove's events), pid, tid, stack.
 *            One row per sample, in the order added (the sampler adds them in time order).
 *
 *   switches time_ns, pid, tid, flags: a sampled thread left its CPU (flags OUT, and
 *            PREEMPT when it was still runnable) or came back to it (flags 0). One row per
 *            switch, in the order added.
 *
 * A flame graph of a time range is the stacks' sample counts summed up the trie; the top
 * functions (trove_profile_top) count, per function, the samples whose leaf frame is that
 * function (self) and those that have it anywhere on their stack (total, once a sample).
 *
 * Ownership: a profile owns everything in it; pointers it hands out are valid until the
 * next call that adds to it, or its free. Not thread-safe: one writer, or many readers.
 */
#ifndef TROVE_PROFILE_H
#define TROVE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The empty stack: the parent of outermost frames, and the stack of a sample that has no
 * user-space frames. */
#define TROVE_PROFILE_ROOT 0u
/* The longest string a profile holds (a C++ name can be long; none is longer than this). */
#define TROVE_PROFILE_STRING_MAX 65535u
/* Rows of any one table at most (ids are u32, and one value is kept for "none"). */
#define TROVE_PROFILE_MAX_ROWS 0xfffffff0u
/* The module of a frame found in no known mapping. */
#define TROVE_PROFILE_UNKNOWN_MODULE "[unknown]"

struct trove_profile_frame {
    uint32_t module;       /* string id: the module's path as mapped ("[unknown]": none) */
    uint32_t function;     /* string id: the function, or "MODULE+0xOFFSET" */
    uint32_t file;         /* string id: the source file, 0 ("") if unknown */
    uint32_t line;         /* the source line, 0 if unknown */
    uint64_t address;      /* the offset in the module's file (see above) */
    uint32_t inline_depth; /* 0: the compiled function; k: inlined k levels into it */
};

struct trove_profile_stack {
    uint32_t frame;  /* frame_id */
    uint32_t parent; /* stack_id of the callers, TROVE_PROFILE_ROOT for none */
};

struct trove_profile_sample {
    uint64_t time_ns; /* CLOCK_MONOTONIC nanoseconds */
    uint32_t pid;
    uint32_t tid;
    uint32_t stack; /* stack_id, TROVE_PROFILE_ROOT for a sample without frames */
};

/* trove_profile_switch.flags */
#define TROVE_PROFILE_SWITCH_OUT 1u     /* the thread left its CPU (else: came back) */
#define TROVE_PROFILE_SWITCH_PREEMPT 2u /* ... while still runnable (only with OUT) */

struct trove_profile_switch {
    uint64_t time_ns; /* CLOCK_MONOTONIC nanoseconds */
    uint32_t pid;
    uint32_t tid;
    uint32_t flags; /* TROVE_PROFILE_SWITCH_* */
};

struct trove_profile;

/* A new empty profile (strings hold "" as id 0). Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_profile_new(struct trove_profile **out);
/* Free a profile (NULL is fine). */
void trove_profile_free(struct trove_profile *p);

/*
 * The id of string s[0..len) (not NUL-terminated; may hold any bytes but NUL), added if
 * new. Errors: TROVE_ERR_INVALID (s NULL with len, a NUL byte), TROVE_ERR_LIMIT (len over
 * TROVE_PROFILE_STRING_MAX, or too many strings), TROVE_ERR_NOMEM; the profile is then as it
 * was.
 */
int trove_profile_string(struct trove_profile *p, const char *s, size_t len, uint32_t *id_out);
/* String id: its bytes, NUL-terminated, and *len_out (may be NULL) its length; NULL for an
 * id out of range. */
const char *trove_profile_string_get(const struct trove_profile *p, uint32_t id, size_t *len_out);
size_t trove_profile_string_count(const struct trove_profile *p);

/*
 * The id of frame f, added if no frame has its module, address and inline_depth (an
 * existing frame is returned as it is: the first one added with those three wins).
 * Errors: TROVE_ERR_INVALID (a string id out of range), TROVE_ERR_LIMIT, TROVE_ERR_NOMEM;
 * the profile is then as it was.
 */
int trove_profile_frame(struct trove_profile *p, const struct trove_profile_frame *f,
                        uint32_t *id_out);
size_t trove_profile_frame_count(const struct trove_profile *p);
/* Frame id (< trove_profile_frame_count), or NULL. */
const struct trove_profile_frame *trove_profile_frame_get(const struct trove_profile *p,
                                                          uint32_t id);

/*
 * The id of the stack that is `frame` called from stack `parent`, added if new. Errors:
 * TROVE_ERR_INVALID (parent not a stack, frame not a frame), TROVE_ERR_LIMIT,
 * TROVE_ERR_NOMEM; the profile is then as it was.
 */
int trove_profile_stack(struct trove_profile *p, uint32_t parent, uint32_t frame,
                        uint32_t *id_out);
/*
 * The stack of frames[0..n), given leaf first (frames[n - 1] the outermost), added as the
 * path of trie rows it needs; n == 0 is TROVE_PROFILE_ROOT. Errors as trove_profile_stack;
 * rows added before a failure stay (they are valid stacks, just unused).
 */
int trove_profile_stack_path(struct trove_profile *p, const uint32_t *frames, size_t n,
                             uint32_t *id_out);
/* Stacks 1 .. count are rows; stack 0 is the root. */
size_t trove_profile_stack_count(const struct trove_profile *p);
/* Stack id, 1 ..= trove_profile_stack_count, or NULL (the root has no row). */
const struct trove_profile_stack *trove_profile_stack_get(const struct trove_profile *p,
                                                          uint32_t id);

/* Add a sample. Errors: TROVE_ERR_INVALID (its stack is not a stack), TROVE_ERR_LIMIT,
 * TROVE_ERR_NOMEM. */
int trove_profile_sample(struct trove_profile *p, const struct trove_profile_sample *s);
size_t trove_profile_sample_count(const struct trove_profile *p);
/* The samples, in the order added (NULL when there are none). */
const struct trove_profile_sample *trove_profile_samples(const struct trove_profile *p);

/* Add a context switch. Errors: TROVE_ERR_INVALID (flags other than OUT, OUT | PREEMPT or
 * 0), TROVE_ERR_LIMIT, TROVE_ERR_NOMEM. */
int trove_profile_switch(struct trove_profile *p, const struct trove_profile_switch *sw);
size_t trove_profile_switch_count(const struct trove_profile *p);
/* The switches, in the order added (NULL when there are none). */
const struct trove_profile_switch *trove_profile_switches(const struct trove_profile *p);

/* Drop every sample and switch, keeping the strings, frames and stacks: a reader that only
 * follows a stream of samples frames (to check each against the rows before it) keeps its
 * memory to the distinct frames and stacks. The next frame decodes as before: samples and
 * switches have no base. */
void trove_profile_clear_samples(struct trove_profile *p);

/*
 * The top functions. A function is a (module, function name) pair; its file is the file of
 * its first frame that names one. For the samples with from_ns <= time_ns < to_ns: self
 * counts those whose leaf frame is the function, total those that have it on their stack
 * (once a sample, however often it recurs). A sample with no frames counts in
 * *samples_out only.
 */
struct trove_profile_func {
    uint32_t module;   /* string ids */
    uint32_t function;
    uint32_t file;
    uint64_t self;
    uint64_t total;
};

/*
 * Every function with a sample in range into *out (malloc'd, the caller frees it with
 * free(); NULL when *n_out is 0), sorted by self, then total (both descending), then
 * function name, module name and file name: the order is the same for the same profile
 * whatever order its rows were added in. *samples_out (may be NULL) gets the samples in
 * range. Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM (nothing returned).
 */
int trove_profile_top(const struct trove_profile *p, uint64_t from_ns, uint64_t to_ns,
                      struct trove_profile_func **out, size_t *n_out, uint64_t *samples_out);

/*
 * A new profile in *out with every string, frame and stack of p (the same ids) and the samples
 * and switches of p whose time_ns is in [from_ns, to_ns), in order. Errors:
 * TROVE_ERR_INVALID, TROVE_ERR_NOMEM (nothing returned).
 */
int trove_profile_slice(const struct trove_profile *p, uint64_t from_ns, uint64_t to_ns,
                        struct trove_profile **out);

/* ---- the samples frame (wire format 6, docs/formats/wire.md) ---------------------------- */

/* How many rows of each table a profile holds (stacks: rows, the root not counted). */
struct trove_profile_counts {
    size_t strings, frames, stacks, samples, switches;
};

void trove_profile_get_counts(const struct trove_profile *p, struct trove_profile_counts *out);

/* A samples frame holds at most this many samples (its header's count), switches and rows
 * of each of strings, frames and stacks; its inflated body at most TROVE_WIRE_MAX_PAYLOAD. */
#define TROVE_PROFILE_FRAME_MAX_SAMPLES 65536u
#define TROVE_PROFILE_FRAME_MAX_ROWS 1048576u

/*
 * Append to out the samples frames (wire format 6) that carry every row p gained since it
 * had the counts *from (NULL: those of a new profile, which holds string 0), in order: a reader whose profile had exactly those
 * counts, decoding them, then holds p. Rows go into frames of about 1 MiB of body (at most
 * TROVE_PROFILE_FRAME_MAX_SAMPLES samples); nothing new gives no frame. The bytes are a
 * function of the rows only. Errors: TROVE_ERR_INVALID (from past p's counts, or with no
 * strings),
 * TROVE_ERR_NOMEM; out then holds what it held.
 */
int trove_profile_encode(const struct trove_profile *p, const struct trove_profile_counts *from,
                         struct trove_bytes *out);

/*
 * Decode the samples frame at buf[0..len) (a wire frame of format 6) into p: its rows are
 * added after p's, which must be exactly the counts the frame starts from (the frames of
 * one stream, in order, into one profile). Every bound and every reference is checked —
 * a string, frame or stack that repeats one p already has is an error too, since ids would
 * then shift — and a bad frame leaves p as it was. *frame_len_out (may be NULL) gets the
 * frame's length: where the next frame starts. Errors: the wire header's errors,
 * TROVE_ERR_TRUNCATED, TROVE_ERR_VARINT, TROVE_ERR_INFLATE, TROVE_ERR_BOMB, TROVE_ERR_LIMIT,
 * TROVE_ERR_CORRUPT (with diag's offset and message), TROVE_ERR_NOMEM.
 */
int trove_profile_decode(struct trove_profile *p, const uint8_t *buf, size_t len,
                         size_t *frame_len_out, struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
