/*
 * client_wire.c: the client's own encoder of what it sends the service: the hello line,
 * raw frame headers and names frames. It is a second writer of formats the codec layer
 * owns (docs/formats/wire.md), kept here so that libtrove-client links nothing but libc;
 * tests/test_client.c decodes its output with trove_wire_decode. And the one thing it reads
 * from the service: the "type" of an answer line (accept, refuse, error), found by a flat
 * scan that never reads past the line (fuzz/fuzz_answer.c checks it against the service's
 * own reader).
 *
 *   frame header, 16 bytes, little-endian:
 *   +-----+-----+--------+---------+-----------+-------------+-------------+
 *   | 'T' | 'V' | format | version | count u32 | payload u32 | raw_len u32 |
 *   +-----+-----+--------+---------+-----------+-------------+-------------+
 *   raw (format 1, version 1):   payload = 32 * count bytes of records
 *   names (format 4, version 1): payload = entry[count],
 *     entry := type:u8 a:varint [tid:varint if type 2] len:varint utf8[len]
 *
 * The client writes only names of types 1-3, so its names frames are always version 1.
 *   attrs (format 7, version 1): payload = strings' count and the stream of
 *     docs/formats/attrs.md: strings, event deltas, key ids, types, 0 keys of differences,
 *     values (an int as a zigzag varint, a string as its id)
 */
#include "client_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void trove__client_buf_free(struct trove__client_buf *b)
{
    free(b->ptr);
    memset(b, 0, sizeof *b);
}

uint8_t *trove__client_buf_reserve(struct trove__client_buf *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n)
            cap *= 2;
        uint8_t *p = realloc(b->ptr, cap);
        if (!p) {
            b->failed = 1;
            return NULL;
        }
        b->ptr = p;
        b->cap = cap;
    }
    return b->ptr + b->len;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put_header(uint8_t *p, uint8_t format, uint32_t count, uint32_t payload)
{
    p[0] = TROVE_WIRE_MAGIC0;
    p[1] = TROVE_WIRE_MAGIC1;
    p[2] = format;
    p[3] = TROVE_WIRE_VERSION;
    put_u32(p + 4, count);
    put_u32(p + 8, payload);
    put_u32(p + 12, 0);
}

void trove__client_raw_header(struct trove__client_buf *b, uint32_t n)
{
    uint8_t *p = trove__client_buf_reserve(b, TROVE_WIRE_HEADER_SIZE);
    if (!p)
        return;
    put_header(p, TROVE_WIRE_RAW, n, n * TROVE_EVENT_SIZE);
    b->len += TROVE_WIRE_HEADER_SIZE;
}

void trove__client_names_begin(struct trove__client_buf *b, struct trove__client_names *nf)
{
    nf->at = b->len;
    nf->count = 0;
    if (trove__client_buf_reserve(b, TROVE_WIRE_HEADER_SIZE))
        b->len += TROVE_WIRE_HEADER_SIZE;
}

static uint8_t *put_varint64(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *put_varint(uint8_t *p, uint32_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

void trove__client_names_add(struct trove__client_buf *b, struct trove__client_names *nf,
                             int type, uint32_t a, uint32_t tid, const char *s, size_t len)
{
    if (len > TROVE__CLIENT_NAME_MAX)
        len = TROVE__CLIENT_NAME_MAX; /* callers sanitize first; never cut mid-frame */
    uint8_t *p = trove__client_buf_reserve(b, 1 + 3 * 5 + len);
    if (!p)
        return;
    uint8_t *q = p;
    *q++ = (uint8_t)type;
    q = put_varint(q, a);
    if (type == TROVE_NAME_THREAD)
        q = put_varint(q, tid);
    q = put_varint(q, (uint32_t)len);
    memcpy(q, s, len);
    q += len;
    b->len += (size_t)(q - p);
    nf->count++;
}

void trove__client_names_end(struct trove__client_buf *b, struct trove__client_names *nf)
{
    if (b->failed)
        return;
    if (!nf->count) {
        b->len = nf->at;
        return;
    }
    put_header(b->ptr + nf->at, TROVE_WIRE_NAMES, nf->count,
               (uint32_t)(b->len - nf->at - TROVE_WIRE_HEADER_SIZE));
}

/* The length of the well-formed UTF-8 sequence at s[0..len), or 0 (Unicode table 3-7). */
static size_t utf8_seq(const uint8_t *s, size_t len)
{
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else
        return 0;
    if (len <= n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k <= n; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    return n + 1;
}

size_t trove__client_sanitize(char *dst, size_t cap, const char *src, size_t len)
{
    const uint8_t *s = (const uint8_t *)src;
    size_t i = 0, o = 0;
    if (!cap)
        return 0;
    while (i < len) {
        size_t n = utf8_seq(s + i, len - i);
        if (o + (n ? n : 1) >= cap)
            break;
        if (n) {
            memcpy(dst + o, s + i, n);
            o += n;
            i += n;
        } else {
            dst[o++] = '?';
            i++;
        }
    }
    dst[o] = 0;
    return o;
}

static int capture_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

int trove__client_capture_valid(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > TROVE__CLIENT_CAPTURE_MAX || s[0] == '.' || s[0] == '-')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!capture_char(s[i]))
            return 0;
    return 1;
}

void trove__client_default_capture(char *dst, size_t cap, const char *program, uint32_t pid)
{
    char suffix[16];
    int sl = snprintf(suffix, sizeof suffix, "-%u", pid);
    size_t room = cap - 1 - (size_t)sl, n = 0;
    if (room > TROVE__CLIENT_CAPTURE_MAX - (size_t)sl)
        room = TROVE__CLIENT_CAPTURE_MAX - (size_t)sl;
    for (const char *p = program ? program : ""; *p && n < room; p++)
        dst[n++] = capture_char(*p) ? *p : '_';
    if (!n)
        for (const char *p = "trove-client"; *p && n < room; p++)
            dst[n++] = *p;
    if (dst[0] == '.' || dst[0] == '-')
        dst[0] = '_';
    memcpy(dst + n, suffix, (size_t)sl + 1);
}

void trove__client_hello(struct trove__client_buf *b, const char *capture, uint32_t pid,
                         int append, uint64_t tsc_hz, uint64_t tsc_ref, uint64_t ns_ref)
{
    char line[512], clock[128] = "";
    if (tsc_hz)
        snprintf(clock, sizeof clock, ",\"clock\":\"tsc\",\"tsc_hz\":%llu,\"tsc_ref\":%llu,"
                 "\"ns_ref\":%llu", (unsigned long long)tsc_hz, (unsigned long long)tsc_ref,
                 (unsigned long long)ns_ref);
    int n = snprintf(line, sizeof line, "{\"capture\":\"%s\",\"producer\":\"trove-client\","
                     "\"pid\":%u%s%s}\n", capture, pid, append ? ",\"append\":true" : "",
                     clock);
    uint8_t *p;
    if (n < 0 || (size_t)n >= sizeof line || !(p = trove__client_buf_reserve(b, (size_t)n)))
        return;
    memcpy(p, line, (size_t)n);
    b->len += (size_t)n;
}

/* ---- the service's answer ---------------------------------------------------------------- */

/* Past the JSON whitespace at s[*i]. */
static void ws(const char *s, size_t len, size_t *i)
{
    while (*i < len && (s[*i] == ' ' || s[*i] == '\t' || s[*i] == '\r' || s[*i] == '\n'))
        (*i)++;
}

/* Past the string whose '"' is at s[*i]: its body is s[from..to) (escapes left as they are).
 * 0, or -1 if it does not end within len. */
static int string_at(const char *s, size_t len, size_t *i, size_t *from, size_t *to)
{
    (*i)++; /* the opening quote */
    *from = *i;
    while (*i < len && s[*i] != '"') {
        if ((unsigned char)s[*i] < 0x20)
            return -1;
        *i += s[*i] == '\\' ? 2 : 1;
    }
    if (*i >= len)
        return -1;
    *to = (*i)++;
    return 0;
}

/* Past one value at s[*i] of any shape (brackets counted, strings skipped whole, the rest —
 * numbers and literals — up to the next delimiter). 0, or -1 if it is not one. */
static int skip_value(const char *s, size_t len, size_t *i)
{
    size_t depth = 0, a, b;

    do {
        ws(s, len, i);
        if (*i >= len)
            return -1;
        if (s[*i] == '"') {
            if (string_at(s, len, i, &a, &b) != 0)
                return -1;
        } else if (s[*i] == '{' || s[*i] == '[') {
            depth++;
            (*i)++;
        } else if (s[*i] == '}' || s[*i] == ']') {
            if (!depth)
                return -1;
            depth--;
            (*i)++;
        } else if (s[*i] == ',' || s[*i] == ':') {
            if (!depth)
                return -1;
            (*i)++;
        } else {
            size_t at = *i;
            while (*i < len && strchr(" \t\r\n,:]}[{\"", s[*i]) == NULL)
                (*i)++;
            if (*i == at)
                return -1;
        }
    } while (depth);
    return 0;
}

int trove__client_answer_type(const char *line, size_t len)
{
    static const char *const types[] = {"accept", "refuse", "error"};
    size_t i = 0, ka, kb, va, vb;
    int type = 0;

    ws(line, len, &i);
    if (i >= len || line[i++] != '{')
        return 0;
    ws(line, len, &i);
    if (i < len && line[i] == '}')
        i++;
    else
        for (;;) {
            int is_type;
            ws(line, len, &i);
            if (i >= len || line[i] != '"' || string_at(line, len, &i, &ka, &kb) != 0)
                return 0;
            is_type = kb - ka == 4 && memcmp(line + ka, "type", 4) == 0;
            ws(line, len, &i);
            if (i >= len || line[i++] != ':')
                return 0;
            ws(line, len, &i);
            if (is_type && i < len && line[i] == '"') {
                if (string_at(line, len, &i, &va, &vb) != 0)
                    return 0;
                type = 0;
                for (int t = 0; t < 3; t++)
                    if (vb - va == strlen(types[t]) && memcmp(line + va, types[t], vb - va) == 0)
                        type = TROVE__CLIENT_ANSWER_ACCEPT + t;
            } else if (skip_value(line, len, &i) != 0) {
                return 0;
            }
            ws(line, len, &i);
            if (i < len && line[i] == ',') {
                i++;
                continue;
            }
            if (i < len && line[i] == '}') {
                i++;
                break;
            }
            return 0;
        }
    ws(line, len, &i);
    return i == len ? type : 0;
}

/* The program's name: the kernel's (/proc/self/comm, at most 15 bytes), else the last
 * component of argv[0] (/proc/self/cmdline); "" if neither can be read. */
void trove__client_program_name(char *dst, size_t cap)
{
    FILE *f = fopen("/proc/self/comm", "r");
    dst[0] = 0;
    if (f) {
        if (fgets(dst, (int)cap, f))
            dst[strcspn(dst, "\n")] = 0;
        fclose(f);
    }
    if (!dst[0] && (f = fopen("/proc/self/cmdline", "r"))) {
        char arg0[4096];
        size_t n = fread(arg0, 1, sizeof arg0 - 1, f);
        fclose(f);
        arg0[n] = 0; /* argv[0] ends at its NUL */
        const char *base = strrchr(arg0, '/');
        base = base ? base + 1 : arg0;
        n = strlen(base) < cap - 1 ? strlen(base) : cap - 1;
        memcpy(dst, base, n);
        dst[n] = 0;
    }
}

/* ---- attrs frames ---- */

void trove__client_attrs_reset(struct trove__client_attrs *a)
{
    a->str.len = 0;
    a->str.failed = 0;
    a->nstr = 0;
    a->n = 0;
    a->failed = 0;
    if (a->slot)
        memset(a->slot, 0, a->nslot * sizeof *a->slot);
}

void trove__client_attrs_free(struct trove__client_attrs *a)
{
    trove__client_buf_free(&a->str);
    free(a->soff);
    free(a->slen);
    free(a->slot);
    free(a->rows);
    memset(a, 0, sizeof *a);
}

static uint32_t str_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* The id of s[0..len) in a's strings, added if new; UINT32_MAX when out of memory. */
static uint32_t intern_str(struct trove__client_attrs *a, const char *s, size_t len)
{
    size_t j;
    if ((a->nstr + 1) * 2 > a->nslot) { /* grow the slots and place every string again */
        size_t nslot = a->nslot ? a->nslot * 2 : 64;
        uint32_t *slot = calloc(nslot, sizeof *slot);
        if (!slot)
            return UINT32_MAX;
        for (uint32_t id = 0; id < a->nstr; id++) {
            j = str_hash((const char *)a->str.ptr + a->soff[id], a->slen[id]) & (nslot - 1);
            while (slot[j])
                j = (j + 1) & (nslot - 1);
            slot[j] = id + 1;
        }
        free(a->slot);
        a->slot = slot;
        a->nslot = nslot;
    }
    j = str_hash(s, len) & (a->nslot - 1);
    for (; a->slot[j]; j = (j + 1) & (a->nslot - 1)) {
        uint32_t id = a->slot[j] - 1;
        if (a->slen[id] == len && !memcmp(a->str.ptr + a->soff[id], s, len))
            return id;
    }
    if (a->nstr == a->scap) {
        size_t cap = a->scap ? a->scap * 2 : 64;
        uint32_t *off = realloc(a->soff, cap * sizeof *off);
        if (!off)
            return UINT32_MAX;
        a->soff = off;
        uint32_t *l = realloc(a->slen, cap * sizeof *l);
        if (!l)
            return UINT32_MAX;
        a->slen = l;
        a->scap = cap;
    }
    uint8_t *p = trove__client_buf_reserve(&a->str, 5 + len);
    if (!p)
        return UINT32_MAX;
    uint8_t *q = put_varint(p, (uint32_t)len);
    a->soff[a->nstr] = (uint32_t)(a->str.len + (size_t)(q - p));
    a->slen[a->nstr] = (uint32_t)len;
    memcpy(q, s, len);
    a->str.len += (size_t)(q - p) + len;
    a->slot[j] = a->nstr + 1;
    return a->nstr++;
}

void trove__client_attrs_add(struct trove__client_attrs *a, uint32_t event, int scope,
                             const char *key, size_t klen, int type, const char *s, size_t len,
                             int64_t v)
{
    struct trove__client_row r;
    if (a->failed)
        return;
    memset(&r, 0, sizeof r);
    r.event = event;
    r.tb = (uint8_t)(type | scope << 4);
    r.i = v;
    if ((r.key = intern_str(a, key, klen)) == UINT32_MAX ||
        (type != TROVE__CLIENT_ATTR_INT && (r.s = intern_str(a, s, len)) == UINT32_MAX)) {
        a->failed = 1;
        return;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        struct trove__client_row *rows = realloc(a->rows, cap * sizeof *rows);
        if (!rows) {
            a->failed = 1;
            return;
        }
        a->rows = rows;
        a->cap = cap;
    }
    a->rows[a->n++] = r;
}

void trove__client_attrs_frame(const struct trove__client_attrs *a, struct trove__client_buf *b)
{
    size_t at = b->len, need;
    uint32_t prev = 0;
    uint8_t *p, *q;
    if (a->failed || a->n == 0)
        return;
    need = TROVE_WIRE_HEADER_SIZE + 5 + a->str.len + a->n * (5 + 5 + 1 + 10) + 1;
    if (!(p = trove__client_buf_reserve(b, need)))
        return;
    q = put_varint(p + TROVE_WIRE_HEADER_SIZE, a->nstr);
    memcpy(q, a->str.ptr, a->str.len);
    q += a->str.len;
    for (size_t i = 0; i < a->n; i++) {
        q = put_varint(q, a->rows[i].event - prev);
        prev = a->rows[i].event;
    }
    for (size_t i = 0; i < a->n; i++)
        q = put_varint(q, a->rows[i].key);
    for (size_t i = 0; i < a->n; i++)
        *q++ = a->rows[i].tb;
    *q++ = 0; /* no key's ints are differences */
    for (size_t i = 0; i < a->n; i++) {
        const struct trove__client_row *r = &a->rows[i];
        if ((r->tb & 15) == TROVE__CLIENT_ATTR_INT)
            q = put_varint64(q, ((uint64_t)r->i << 1) ^ (uint64_t)(r->i >> 63));
        else
            q = put_varint(q, r->s);
    }
    put_header(p, TROVE_WIRE_ATTRS, (uint32_t)a->n,
               (uint32_t)((size_t)(q - p) - TROVE_WIRE_HEADER_SIZE));
    b->len = at + (size_t)(q - p);
}
