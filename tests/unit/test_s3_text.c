/*
 * test_s3_text.c: the store-on-S3 texts that come from the network (src/store/s3/s3_text.c):
 * a lease that formats parses back field for field; every way a lease text can be wrong
 * (a wrong version, an uppercase or short token, a pid of 0, a space in the host, trailing
 * bytes, a NUL inside, too long, empty) is refused; LastModified times, valid and not;
 * Content-Range, exact and every malformed shape.
 */
#include <stdio.h>
#include <string.h>

#include "store/s3/s3_text.h"
#include "testutil.h"

static int parses(const char *text) {
    struct trove__s3_lease l;
    return trove__s3_lease_parse(text, strlen(text), &l) == 0;
}

static void test_lease(void)
{
    struct trove__s3_lease l = {"0123456789abcdef0123456789abcdef", "host-1.example", 4242,
                                1796170100123}, back;
    char text[TROVE__S3_LEASE_MAX + 8];
    int n = trove__s3_lease_format(&l, text, sizeof text);

    CHECK(n > 0);
    CHECK_EQ_INT(trove__s3_lease_parse(text, (size_t)n, &back), 0);
    CHECK(!strcmp(back.token, l.token) && !strcmp(back.host, l.host));
    CHECK_EQ_INT(back.pid, 4242);
    CHECK_EQ_INT(back.expires_ms, 1796170100123);
    CHECK_EQ_INT(trove__s3_lease_format(&l, text, 20), -1); /* does not fit */
    CHECK(parses("trove-lease 1\ntoken 0123456789abcdef0123456789abcdef\nholder h 7\nexpires 5\n"));
    CHECK(!parses("trove-lease 2\ntoken 0123456789abcdef0123456789abcdef\nholder h 7\nexpires 5\n"));
    CHECK(!parses("trove-lease 1\ntoken 0123456789ABCDEF0123456789abcdef\nholder h 7\nexpires 5\n"));
    CHECK(!parses("trove-lease 1\ntoken 0123456789abcdef\nholder h 7\nexpires 5\n"));
    CHECK(!parses("trove-lease 1\ntoken 0123456789abcdef0123456789abcdef\nholder h 0\nexpires 5\n"));
    CHECK(!parses("trove-lease 1\ntoken 0123456789abcdef0123456789abcdef\nholder h\nexpires 5\n"));
    CHECK(!parses("trove-lease 1\ntoken 0123456789abcdef0123456789abcdef\nholder h 7\nexpires 5\nx"));
    CHECK(!parses("trove-lease 1\ntoken 0123456789abcdef0123456789abcdef\nholder h 7\n"));
    CHECK(!parses("garbage"));
    CHECK_EQ_INT(trove__s3_lease_parse("", 0, &back), -1);
    {
        char nul[] = "trove-lease 1\ntoken 0123456789abcdef0123456789abcdef\nholder h 7\nexpires 5\n";
        nul[3] = '\0';
        CHECK_EQ_INT(trove__s3_lease_parse(nul, sizeof nul - 1, &back), -1);
    }
    {
        static char big[TROVE__S3_LEASE_MAX + 2];
        memset(big, ' ', sizeof big);
        CHECK_EQ_INT(trove__s3_lease_parse(big, sizeof big, &back), -1);
    }
    strcpy(l.host, "a b");
    CHECK_EQ_INT(trove__s3_lease_format(&l, text, sizeof text), -1);
}

static void test_time(void)
{
    CHECK_EQ_INT(trove__s3_parse_time("1970-01-01T00:00:00.000Z"), 0);
    CHECK_EQ_INT(trove__s3_parse_time("2026-12-02T00:01:02.000Z"), 1796169662);
    CHECK_EQ_INT(trove__s3_parse_time("2026-12-02T00:01:02Z"), 1796169662);
    CHECK_EQ_INT(trove__s3_parse_time("1969-12-31T23:59:59Z"), -1);
    CHECK_EQ_INT(trove__s3_parse_time("2026-13-02T00:01:02Z"), -1);
    CHECK_EQ_INT(trove__s3_parse_time("2026-12-02 00:01:02"), -1);
    CHECK_EQ_INT(trove__s3_parse_time(""), -1);
}

static void test_content_range(void)
{
    uint64_t a = 1, b = 1, n = 1;

    CHECK_EQ_INT(trove__s3_parse_content_range("bytes 0-65535/1048576", &a, &b, &n), 1);
    CHECK(a == 0 && b == 65535 && n == 1048576);
    CHECK_EQ_INT(trove__s3_parse_content_range("bytes 9-9/10", &a, &b, &n), 1);
    CHECK_EQ_INT(trove__s3_parse_content_range("bytes 9-10/10", &a, &b, &n), 0);
    CHECK_EQ_INT(trove__s3_parse_content_range("bytes 5-4/10", &a, &b, &n), 0);
    CHECK_EQ_INT(trove__s3_parse_content_range("bytes 0-1/*", &a, &b, &n), 0);
    CHECK_EQ_INT(trove__s3_parse_content_range("bytes */10", &a, &b, &n), 0);
    CHECK_EQ_INT(trove__s3_parse_content_range("bytes 0-1/10 ", &a, &b, &n), 0);
    CHECK_EQ_INT(trove__s3_parse_content_range("bytes 0-99999999999999999999/1", &a, &b, &n), 0);
    CHECK_EQ_INT(trove__s3_parse_content_range("items 0-1/10", &a, &b, &n), 0);
    CHECK_EQ_INT(trove__s3_parse_content_range("", &a, &b, &n), 0);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_lease);
    RUN(test_time);
    RUN(test_content_range);
    return test_done();
}
