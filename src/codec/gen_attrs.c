/*
 * gen_attrs.c: attributes for the generator's events (trove_gen_attrs, docs/gen.md,
 * "Attributes"): what an instrumented program attaches to its zones — a resource's path, a
 * size, a frame's text and a value that climbs — on a fixed share of the names, each drawn
 * from a hash of the event's name and index, so the same events always get the same rows.
 */
#include "trove/attrs.h"
#include "trove/gen.h"

#include <stdio.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* A row of event ev: key and a string s (type STRING) or the int i (type INT). */
static int add(struct trove_attrs *a, uint64_t ev, const char *key, int type, int64_t i,
               const char *s)
{
    struct trove_attr r;
    int rc;
    memset(&r, 0, sizeof r);
    r.event = ev;
    r.scope = TROVE_ATTR_ARG;
    r.type = (uint8_t)type;
    r.v.i = i;
    if ((rc = trove_attrs_intern(a, key, strlen(key), &r.key)) != TROVE_OK ||
        (s && (rc = trove_attrs_intern(a, s, strlen(s), &r.v.s)) != TROVE_OK))
        return rc;
    return trove_attrs_add(a, &r);
}

int trove_gen_attrs(const struct trove_event *ev, size_t n, uint64_t first, uint64_t base,
                    struct trove_attrs *out)
{
    size_t n0 = out ? out->n : 0;
    int rc = TROVE_OK;

    if (!out || (!ev && n))
        return TROVE_ERR_INVALID;
    for (size_t i = 0; rc == TROVE_OK && i < n; i++) {
        const struct trove_event *e = &ev[i];
        uint64_t h = mix((uint64_t)e->name_id << 40 ^ (first + i)), at = base + i;
        char s[96];
        if (e->kind != TROVE_KIND_ZONE && e->kind != TROVE_KIND_FRAME)
            continue;
        switch (e->name_id % 8) {
        case 0: { /* a resource: a few paths per name, some far more often than others */
            double u = (double)(h & 0xffff) / 65536.0;
            snprintf(s, sizeof s, "assets/zone_%u/%u.bin", (unsigned)e->name_id,
                     (unsigned)(64 * u * u * u));
            rc = add(out, at, "path", TROVE_ATTR_STRING, 0, s);
            break;
        }
        case 1: /* a size: powers of two and a little more */
            rc = add(out, at, "bytes", TROVE_ATTR_INT, ((int64_t)1 << (4 + h % 16)) + (int64_t)(h >> 8 & 1023), NULL);
            break;
        case 2: /* a frame's text and a value that climbs with time */
            snprintf(s, sizeof s, "frame %llu", (unsigned long long)(e->start_ns / 16666667));
            rc = add(out, at, "text", TROVE_ATTR_STRING, 0, s);
            if (rc == TROVE_OK)
                rc = add(out, at, "value", TROVE_ATTR_INT, (int64_t)(e->start_ns / 1000), NULL);
            break;
        default:
            break;
        }
    }
    if (rc != TROVE_OK)
        out->n = n0;
    return rc;
}
