/*
 * perfetto_test.h: Perfetto protobuf traces built by hand for the tests: varints, fields,
 * messages, a thread track descriptor and a track event packet.
 */
#ifndef TROVE_TESTS_PERFETTO_TEST_H
#define TROVE_TESTS_PERFETTO_TEST_H

#include <stdint.h>
#include <string.h>

struct pb {
    uint8_t b[4096];
    size_t n;
};

static inline void put_varint(struct pb *p, uint64_t v)
{
    while (v >= 0x80) {
        p->b[p->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p->b[p->n++] = (uint8_t)v;
}

static inline void put_uint(struct pb *p, uint32_t field, uint64_t v)
{
    put_varint(p, (uint64_t)field << 3);
    put_varint(p, v);
}

static inline void put_msg(struct pb *p, uint32_t field, const struct pb *m)
{
    put_varint(p, (uint64_t)field << 3 | 2);
    put_varint(p, m->n);
    memcpy(p->b + p->n, m->b, m->n);
    p->n += m->n;
}

/* A packet on sequence 1 at absolute time ts with a track event of `type` on track. */
static inline void put_event(struct pb *trace, uint64_t ts, uint64_t type, uint64_t track)
{
    struct pb pkt = {{0}, 0}, te = {{0}, 0};
    put_uint(&te, 9, type);
    put_uint(&te, 11, track);
    put_uint(&pkt, 8, ts);
    put_uint(&pkt, 10, 1);
    put_msg(&pkt, 11, &te);
    put_msg(trace, 1, &pkt);
}

/* A packet with a thread track descriptor (uuid, pid, tid), or a child of parent. */
static inline void put_track(struct pb *trace, uint64_t uuid, uint64_t parent, int32_t pid, int32_t tid)
{
    struct pb pkt = {{0}, 0}, td = {{0}, 0}, th = {{0}, 0};
    put_uint(&td, 1, uuid);
    if (parent) {
        put_uint(&td, 5, parent);
    } else {
        put_uint(&th, 1, (uint64_t)(int64_t)pid);
        put_uint(&th, 2, (uint64_t)(int64_t)tid);
        put_msg(&td, 4, &th);
    }
    put_uint(&pkt, 10, 1);
    put_msg(&pkt, 60, &td);
    put_msg(trace, 1, &pkt);
}

#endif
