/*
 * client_attrs.c: what the flush thread makes of the ring's records that are not events
 * (client_internal.h): a zone's texts and values wait until the zone's record comes, then
 * become its rows of the attrs frame sent before its events frame; a message becomes an
 * instant and its text that instant's row. Runs on the flush thread only; the recording
 * threads never come here.
 */
#include "client_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A text being joined, or a message's text being read and made valid UTF-8. */
static struct trove__client_buf tb;

void trove__client_attrs_scratch_free(void)
{
    trove__client_buf_free(&tb);
}

/* The text of the aux record at ring index `at` (its slots after it) into dst[0..len). */
static void ring_text(const struct thread *t, uint64_t at, char *dst, size_t len)
{
    for (size_t k = 0; k * 32 < len; k++)
        memcpy(dst + k * 32, &t->ring[(at + 1 + k) & t->mask], len - k * 32 < 32 ? len - k * 32 : 32);
}

/* A text or value record at ring index `at` kept until its zone comes; lost if out of
 * memory. */
void trove__client_pend_add(struct thread *t, const struct trove_event *r, uint64_t at)
{
    struct pending_attr *e;
    size_t len = r->kind == AUX_TEXT ? r->pid : 0;
    if (t->npend == t->cap_pend) {
        size_t cap = t->cap_pend ? t->cap_pend * 2 : 16;
        struct pending_attr *p = realloc(t->pend, cap * sizeof *p);
        if (!p)
            return;
        t->pend = p;
        t->cap_pend = cap;
    }
    if (t->pcap - t->plen < len) {
        size_t cap = t->pcap ? t->pcap : 4096;
        while (cap - t->plen < len)
            cap *= 2;
        char *p = realloc(t->pbytes, cap);
        if (!p)
            return;
        t->pbytes = p;
        t->pcap = cap;
    }
    e = &t->pend[t->npend++];
    e->start = r->start_ns;
    e->value = r->dur_ns;
    e->depth = r->depth;
    e->text = r->kind == AUX_TEXT;
    e->off = t->plen;
    e->len = len;
    ring_text(t, at, t->pbytes + t->plen, len);
    t->plen += len;
}

/* Append src[0..len) to tb as valid UTF-8. */
static void text_append(const char *src, size_t len)
{
    uint8_t *p = trove__client_buf_reserve(&tb, len + 1);
    if (p)
        tb.len += trove__client_sanitize((char *)p, len + 1, src, len);
}

/* Zone z, event n of the frame being built: its texts (joined by newlines, key "text") and
 * values (keys "value", "value_2", ...) become its rows. Texts and values of zones at its
 * depth or deeper that are not its are of zones not recorded (the ring was full): dropped. */
void trove__client_attach(struct thread *t, const struct trove_event *z, uint32_t n,
                          struct trove__client_attrs *rows)
{
    size_t keep = 0, texts = 0, values = 0;
    tb.len = 0;
    tb.failed = 0;
    for (size_t i = 0; i < t->npend; i++) {
        const struct pending_attr *e = &t->pend[i];
        if (e->depth != z->depth || e->start != z->start_ns || !e->text)
            continue;
        if (texts++)
            text_append("\n", 1);
        text_append(t->pbytes + e->off, e->len);
    }
    if (texts && !tb.failed)
        trove__client_attrs_add(rows, n, TROVE__CLIENT_SCOPE_ARG, "text", 4,
                                TROVE__CLIENT_ATTR_STRING, (const char *)tb.ptr, tb.len, 0);
    for (size_t i = 0; i < t->npend; i++) {
        const struct pending_attr *e = &t->pend[i];
        char key[32], num[24];
        int klen, vlen;
        if (e->depth < z->depth) {
            t->pend[keep++] = *e;
            continue;
        }
        if (e->depth != z->depth || e->start != z->start_ns || e->text)
            continue;
        klen = ++values == 1 ? snprintf(key, sizeof key, "value")
                             : snprintf(key, sizeof key, "value_%zu", values);
        if (e->value <= (uint64_t)INT64_MAX) {
            trove__client_attrs_add(rows, n, TROVE__CLIENT_SCOPE_ARG, key, (size_t)klen,
                                    TROVE__CLIENT_ATTR_INT, NULL, 0, (int64_t)e->value);
        } else { /* past an int: the exact number, as JSON text */
            vlen = snprintf(num, sizeof num, "%llu", (unsigned long long)e->value);
            trove__client_attrs_add(rows, n, TROVE__CLIENT_SCOPE_ARG, key, (size_t)klen,
                                    TROVE__CLIENT_ATTR_JSON, num, (size_t)vlen, 0);
        }
    }
    t->npend = keep;
    if (!keep)
        t->plen = 0;
}

/* The message at ring index `at`: its instant into fs.mb (its offset in *off), its text
 * event n's row (key "log_message", as a Perfetto log message imports); 0 if out of memory
 * (the message is lost). */
int trove__client_message(const struct thread *t, const struct trove_event *r, uint64_t at,
                          uint32_t n, struct trove__client_buf *mb, size_t *off,
                          struct trove__client_attrs *rows)
{
    size_t len = r->pid;
    struct trove_event *e = (struct trove_event *)trove__client_buf_reserve(mb, sizeof *e);
    uint8_t *p;
    if (!e) {
        mb->failed = 0;
        return 0;
    }
    memset(e, 0, sizeof *e);
    e->start_ns = r->start_ns;
    e->pid = t->pid;
    e->tid = t->tid;
    e->kind = TROVE_KIND_INSTANT;
    e->depth = r->depth;
    e->name_id = r->name_id;
    *off = mb->len;
    mb->len += sizeof *e;
    tb.len = 0;
    tb.failed = 0;
    if ((p = trove__client_buf_reserve(&tb, 2 * len + 1))) { /* the text, then it sanitized */
        ring_text(t, at, (char *)p, len);
        size_t k = trove__client_sanitize((char *)p + len, len + 1, (const char *)p, len);
        trove__client_attrs_add(rows, n, TROVE__CLIENT_SCOPE_FIELD, "log_message", 11,
                                TROVE__CLIENT_ATTR_STRING, (const char *)p + len, k, 0);
    }
    return 1;
}

