/*
 * fuzz_s3_text.c: libFuzzer target for the small texts of the store on S3 that come from
 * the network (src/store/s3/s3_text.c): the writer's lease object, a listing's LastModified,
 * a ranged answer's Content-Range. The input is all three at once (the lease from the exact
 * bytes, the others from a NUL-terminated copy). Oracles: a lease that parses has a 32-hex
 * token, a host without spaces and a positive pid, and formats back to a text that parses
 * to the same fields; a time that parses is not before 1970; a Content-Range that parses
 * has A <= B < SIZE and reads back the same from its own formatting.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/s3/s3_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_lease(const uint8_t *data, size_t size)
{
    struct trove__s3_lease l, again;
    char text[TROVE__S3_LEASE_MAX];
    int n;

    if (trove__s3_lease_parse(data, size, &l) != 0)
        return;
    if (strlen(l.token) != 32 || !l.host[0] || strchr(l.host, ' ') || l.pid <= 0)
        abort();
    if ((n = trove__s3_lease_format(&l, text, sizeof text)) < 0 ||
        trove__s3_lease_parse(text, (size_t)n, &again) != 0 || strcmp(l.token, again.token) ||
        strcmp(l.host, again.host) || l.pid != again.pid || l.expires_ms != again.expires_ms)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    uint64_t a, b, total, a2, b2, t2;
    char back[96];

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    check_lease(data, size);
    if (trove__s3_parse_time(s) < -1)
        abort();
    if (trove__s3_parse_content_range(s, &a, &b, &total)) {
        if (!(a <= b && b < total))
            abort();
        snprintf(back, sizeof back, "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, a, b, total);
        if (!trove__s3_parse_content_range(back, &a2, &b2, &t2) || a2 != a || b2 != b ||
            t2 != total)
            abort();
    }
    free(s);
    return 0;
}
