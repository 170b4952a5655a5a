/*
 * s3_text.c: the lease text, LastModified and Content-Range (s3_text.h).
 */
#define _GNU_SOURCE /* timegm */

#include "s3_text.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Decimal digits at *p (1..19 of them, so no overflow), *p moved past them. 1 if any. */
static int parse_u64(const char **p, uint64_t *out)
{
    const char *q = *p;
    uint64_t v = 0;
    int n = 0;

    for (; *q >= '0' && *q <= '9' && n < 19; q++, n++)
        v = v * 10 + (uint64_t)(*q - '0');
    if (n == 0 || (*q >= '0' && *q <= '9'))
        return 0;
    *p = q;
    *out = v;
    return 1;
}

int trove__s3_parse_content_range(const char *p, uint64_t *a, uint64_t *b, uint64_t *size)
{
    if (strncmp(p, "bytes ", 6) != 0)
        return 0;
    p += 6;
    if (!parse_u64(&p, a) || *p++ != '-' || !parse_u64(&p, b) || *p++ != '/' ||
        !parse_u64(&p, size) || *p != '\0')
        return 0;
    return *a <= *b && *b < *size;
}

int64_t trove__s3_parse_time(const char *t)
{
    struct tm tm;
    int y, mo, d, h, mi, s;

    if (sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &s) != 6 || y < 1970 ||
        mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 ||
        s > 60)
        return -1;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    return (int64_t)timegm(&tm);
}

static int token_ok(const char *t)
{
    size_t n = 0;
    for (; t[n]; n++)
        if (!((t[n] >= '0' && t[n] <= '9') || (t[n] >= 'a' && t[n] <= 'f')))
            return 0;
    return n == 32;
}

static int host_ok(const char *h)
{
    size_t n = strlen(h);
    if (n == 0 || n >= sizeof ((struct trove__s3_lease *)0)->host)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)h[i] <= ' ' || h[i] == 0x7f)
            return 0;
    return 1;
}

int trove__s3_lease_parse(const void *p, size_t n, struct trove__s3_lease *out)
{
    char text[TROVE__S3_LEASE_MAX + 1];
    long long exp;
    int used = 0;

    memset(out, 0, sizeof *out);
    if (n == 0 || n > TROVE__S3_LEASE_MAX)
        return -1;
    memcpy(text, p, n);
    text[n] = '\0';
    if (strlen(text) != n) /* a NUL inside: not a text */
        return -1;
    if (sscanf(text, "trove-lease 1\ntoken %32[0-9a-f]\nholder %127s %ld\nexpires %lld\n%n",
               out->token, out->host, &out->pid, &exp, &used) != 4 ||
        used != (int)n || !token_ok(out->token) || !host_ok(out->host) || out->pid <= 0) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    out->expires_ms = (int64_t)exp;
    return 0;
}

int trove__s3_lease_format(const struct trove__s3_lease *l, char *out, size_t cap)
{
    int n;

    if (!token_ok(l->token) || !host_ok(l->host) || l->pid <= 0)
        return -1;
    n = snprintf(out, cap, "trove-lease 1\ntoken %s\nholder %s %ld\nexpires %" PRId64 "\n",
                 l->token, l->host, l->pid, l->expires_ms);
    return n > 0 && (size_t)n < cap ? n : -1;
}
