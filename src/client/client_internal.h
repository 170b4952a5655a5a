/*
 * client_internal.h (internal): what client.c and client_attrs.c share: a thread's state
 * (its ring, the flush thread's side of it) and the ring's records that are not events.
 */
#ifndef TROVE_CLIENT_INTERNAL_H
#define TROVE_CLIENT_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <time.h>

#include "client_wire.h"

#define DEPTH_MAX 255u    /* depth is a u8 on the wire; deeper zones are not recorded */
#define CACHE_SLOTS 256u  /* per-thread direct-mapped cache: name address -> id */
#define THREAD_NAME_MAX 256u
#define FRAME_SETS 8u     /* frame sets a thread times at once (TROVE_FRAME_MARK_NAMED) */
#define ATTRS_FRAME_MAX ((size_t)4 << 20) /* string bytes of one attrs frame before it is cut */

/*
 * Records of the ring that are not events: a zone's text or value, and a message. They never
 * go out as they are: the flush thread reads them and sends the events' attributes in attrs
 * frames. kind is one of these (above every event kind), pid the text's length in bytes,
 * which follows in the next ceil(len / 32) slots.
 *   AUX_TEXT   a text of the zone open at `depth` that started at start_ns
 *   AUX_VALUE  a value (dur_ns) of that zone
 *   AUX_MESSAGE a message: an instant at start_ns and `depth` named name_id, its text after
 */
#define AUX_TEXT 0x80u
#define AUX_VALUE 0x81u
#define AUX_MESSAGE 0x82u
#define AUX_TEXT_MAX 65535u /* bytes of a text kept (a longer one is cut) */


struct open_zone {
    uint64_t start_ns;
    uint32_t name_id;
};

struct thread {
    /* The thread's side: written by the thread only. */
    _Alignas(64) struct trove_event *ring;
    uint64_t mask;
    _Atomic uint64_t head;
    uint64_t tail_seen; /* the last tail the thread read */
    _Atomic uint64_t dropped;
    uint32_t pid, tid;
    unsigned depth;
    struct {
        const char *ptr;
        uint32_t id;
    } cache[CACHE_SLOTS];
    struct open_zone stack[DEPTH_MAX];
    size_t text_max; /* bytes of a text a record holds: a quarter of the ring, at most
                        AUX_TEXT_MAX */
    /* The thread has put a record that is not an event into its ring (set before the head
     * that publishes it, never cleared): until then the flush thread sends the ring as it is,
     * without reading a record. */
    _Atomic int aux_used;
    _Atomic uint64_t attrs_dropped; /* texts and values lost at a full ring */
    struct {
        uint32_t id;   /* a frame set's name id (0: none) */
        uint32_t gen;  /* of the run (start) that marked it */
        uint32_t tid;  /* the set's track */
        uint64_t last; /* and the time of its last mark */
    } frames[FRAME_SETS];
    /* The flush thread's side. tail moves under reg_lock, with the sent and lost totals it
     * moves into. */
    _Alignas(64) _Atomic uint64_t tail;
    _Atomic int retired;
    uint64_t base_dropped, base_attrs_dropped; /* at the last start (under reg_lock) */
    uint64_t taken; /* events the flush thread took out of the ring since start (reg_lock) */
    /* Texts and values read from the ring whose zone has not come yet (flush thread only):
     * each its zone's depth and start, a value or a text at [off, off + len) of pbytes. */
    struct pending_attr {
        uint64_t start, value;
        size_t off, len;
        uint8_t depth, text;
    } *pend;
    size_t npend, cap_pend;
    char *pbytes;
    size_t plen, pcap;
    /* Under reg_lock: the thread's name and whether it still has to go out. */
    char name[THREAD_NAME_MAX];
    int name_len, name_unsent;
    struct thread *next;
};

/* The slots a record at `at` takes: 1, and its text's for an aux record. */
static inline uint64_t record_slots(const struct trove_event *r)
{
    return r->kind >= AUX_TEXT ? 1 + ((uint64_t)r->pid + 31) / 32 : 1;
}

/* The events among t's records [tail, head): the others are texts and values. */
static inline uint64_t ring_events(const struct thread *t, uint64_t tail, uint64_t head)
{
    uint64_t n = 0;
    if (!atomic_load_explicit(&t->aux_used, memory_order_relaxed))
        return head - tail; /* head read with acquire: an aux record before it shows the flag */
    while (tail < head) {
        const struct trove_event *r = &t->ring[tail & t->mask];
        n += r->kind < AUX_TEXT || r->kind == AUX_MESSAGE;
        tail += record_slots(r);
    }
    return n;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* client_clock.c: does the CPU say its TSC ticks at one rate in every state (x86's
 * constant_tsc and nonstop_tsc)? And the TSC and CLOCK_MONOTONIC at one instant (*tsc_out 0
 * without a TSC). */
int trove__client_tsc_constant(void);
void trove__client_clock_pair(uint64_t *tsc_out, uint64_t *ns_out);

/* client_attrs.c: the flush thread's reading of a ring's texts, values and messages. */

/* A text or value record at ring index `at` kept in t->pend until its zone comes (lost if
 * out of memory). */
void trove__client_pend_add(struct thread *t, const struct trove_event *r, uint64_t at);
/* Zone z, event n of the frame being built: the texts and values waiting for it become its
 * rows (docs/client.md); those of zones at its depth or deeper that are not its are of
 * zones never recorded (the ring was full), and go. */
void trove__client_attach(struct thread *t, const struct trove_event *z, uint32_t n,
                          struct trove__client_attrs *rows);
/* The message at ring index `at`, event n of the frame being built: its instant appended to
 * mb (its offset in *off), its text its row "log_message" in rows; 0 if out of memory (the
 * message is lost). */
int trove__client_message(const struct thread *t, const struct trove_event *r, uint64_t at,
                          uint32_t n, struct trove__client_buf *mb, size_t *off,
                          struct trove__client_attrs *rows);
/* Free client_attrs.c's scratch (the flush thread, as it ends). */
void trove__client_attrs_scratch_free(void);

#endif
