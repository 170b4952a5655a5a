/* testutil.c: see testutil.h. */
#include "testutil.h"
#include "trove/capture.h"
#include "trove/digest.h"
#include "trove/event.h"
#include "trove/backend.h"
#include "trove/stream.h"
#include "trove/wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

int test_passed, test_failed;

void test_fail(const char *file, int line, const char *what)
{
    test_failed++;
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
}

void test_fail_int(const char *file, int line, const char *what, long long a, long long b)
{
    test_failed++;
    fprintf(stderr, "%s:%d: check failed: %s (%lld vs %lld)\n", file, line, what, a, b);
}

/* ---- cases ---- */

#define MAX_CASES 256

static struct {
    const char *prog;     /* argv[0]'s last part */
    char **want;          /* the names asked for; none: every case */
    int n_want, list;
    const char *seen[MAX_CASES]; /* the cases met so far, each once, in order */
    int n_seen;
} cases = {"test", NULL, 0, 0, {0}, 0};

void test_init(int argc, char **argv)
{
    const char *slash = argc > 0 ? strrchr(argv[0], '/') : NULL;

    if (argc > 0)
        cases.prog = slash ? slash + 1 : argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--list") == 0) {
            cases.list = 1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: %s [--list] [CASE...]\n", cases.prog);
            exit(2);
        }
    }
    cases.want = argv + 1;
    cases.n_want = argc > 1 ? argc - 1 : 0;
}

int test_listing(void)
{
    return cases.list;
}

int test_case(const char *fn)
{
    const char *name = strncmp(fn, "test_", 5) == 0 ? fn + 5 : fn;
    int seen = 0, chosen = cases.n_want == 0;

    for (int i = 0; i < cases.n_seen && !seen; i++)
        seen = strcmp(cases.seen[i], name) == 0;
    if (!seen && cases.n_seen < MAX_CASES)
        cases.seen[cases.n_seen++] = name;
    if (cases.list) {
        if (!seen)
            printf("%s\n", name);
        return 0;
    }
    for (int i = 0; i < cases.n_want && !chosen; i++)
        chosen = strcmp(cases.want[i], name) == 0;
    return chosen;
}

/* A name asked for that no RUN met: the cases listed, and 2. 0 when every name was met. */
static int unknown_cases(void)
{
    int bad = 0;

    for (int i = 0; i < cases.n_want; i++) {
        int found = cases.want[i][0] == '-';
        for (int j = 0; j < cases.n_seen && !found; j++)
            found = strcmp(cases.seen[j], cases.want[i]) == 0;
        if (!found) {
            fprintf(stderr, "%s: no case named %s\n", cases.prog, cases.want[i]);
            bad = 1;
        }
    }
    if (!bad)
        return 0;
    fprintf(stderr, "%s: its cases:", cases.prog);
    for (int j = 0; j < cases.n_seen; j++)
        fprintf(stderr, " %s", cases.seen[j]);
    fprintf(stderr, "\n");
    return 2;
}

int test_done(void)
{
    int rc;

    if (cases.list)
        return 0;
    if ((rc = unknown_cases()) != 0)
        return rc;
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}

void test_skip(const char *why)
{
    /* A skip must never hide a failure that came before it. */
    printf("skipped: %s\n", why);
    if (test_failed)
        exit(test_done());
    exit(77);
}

uint8_t *test_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto out;
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        *len_out = (size_t)n;
out:
    fclose(f);
    return buf;
}

uint64_t test_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void test_check_vector(const char *file, const void *ptr, size_t n)
{
    char path[1024];
    size_t len = 0;
    uint8_t *want;
    snprintf(path, sizeof path, "%s/tests/vectors/%s", TROVE_SOURCE_DIR, file);
    if (getenv("TROVE_REGEN_VECTORS")) {
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(ptr, 1, n, f) == n);
        if (f)
            fclose(f);
        return;
    }
    want = test_read_file(path, &len);
    CHECK(want != NULL);
    if (!want)
        return;
    CHECK_EQ_INT(len, n);
    if (len != n || memcmp(want, ptr, len) != 0)
        fprintf(stderr, "%s: differs from a fresh encoding\n", file);
    CHECK(len == n && memcmp(want, ptr, len) == 0);
    free(want);
}

void test_rm_rf(const char *path)
{
    struct stat st;
    DIR *dp;
    struct dirent *de;
    char sub[4096];

    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode) && (dp = opendir(path)) != NULL) {
        while ((de = readdir(dp)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            test_rm_rf(sub);
        }
        closedir(dp);
        rmdir(path);
    } else {
        unlink(path);
    }
}

int test_count_dir(const char *path)
{
    DIR *dp = opendir(path);
    struct dirent *de;
    int n = 0;

    if (!dp)
        return -1;
    while ((de = readdir(dp)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            n++;
    closedir(dp);
    return n;
}

void test_expect_decode_error(test_decode_fn dec, size_t out_size, const uint8_t *buf, size_t len,
                              int want, uint64_t want_off, const char *needle, const char *what)
{
    _Alignas(16) uint8_t out[1024];
    uint8_t *copy = malloc(len ? len : 1), sentinel[1024];
    struct trove_diag diag = {0};
    int rc;

    CHECK(copy != NULL && out_size <= sizeof out);
    if (!copy || out_size > sizeof out) {
        free(copy);
        return;
    }
    if (len)
        memcpy(copy, buf, len);
    memset(sentinel, 0xA5, sizeof sentinel);
    memcpy(out, sentinel, sizeof out);
    rc = dec(copy, len, out, &diag);
    if (rc != want)
        fprintf(stderr, "%s: got %d (%s) want %d\n", what, rc, diag.msg, want);
    CHECK_EQ_INT(rc, want);
    CHECK_EQ_INT(diag.code, want);
    CHECK(diag.msg[0] != 0);
    if (want_off != UINT64_MAX && diag.offset != want_off)
        fprintf(stderr, "%s: offset %llu want %llu\n", what, (unsigned long long)diag.offset,
                (unsigned long long)want_off);
    if (want_off != UINT64_MAX)
        CHECK_EQ_INT(diag.offset, want_off);
    if (needle && !strstr(diag.msg, needle)) {
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, diag.msg, needle);
        CHECK(0);
    }
    CHECK(memcmp(out, sentinel, out_size) == 0);
    CHECK_EQ_INT(dec(copy, len, out, NULL), want);
    free(copy);
}

void test_corpus_write(const char *env, const char *name, const void *prefix, size_t plen,
                       const void *buf, size_t len)
{
    const char *dir = getenv(env);
    char path[1024];
    FILE *f;

    if (!dir)
        return;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    CHECK(f && (plen == 0 || fwrite(prefix, 1, plen, f) == plen) &&
          (len == 0 || fwrite(buf, 1, len, f) == len));
    if (f)
        fclose(f);
}

int test_same_names(const struct trove_names *a, const struct trove_names *b)
{
    if (trove_names_count(a) != trove_names_count(b))
        return 0;
    for (size_t i = 0; i < trove_names_count(a); i++) {
        struct trove_name_entry e;
        size_t len = 0;
        const char *s;
        trove_names_entry(a, i, &e);
        if (trove_name_type_is_sort(e.type)) {
            int32_t v = 0;
            if (!trove_names_get_sort(b, e.type, e.a, e.b, &v) || v != e.sort_index)
                return 0;
            continue;
        }
        s = trove_names_get(b, e.type, e.a, e.b, &len);
        if (!s || len != e.len || memcmp(s, e.str, len) != 0)
            return 0;
    }
    return 1;
}

/* ---- a capture read back ---- */

struct load {
    struct trove_wire_decoder *dec;
    struct trove_event *buf;
    struct trove_events *ev;
    struct trove_names *names;
    int rc;
};

static int load_send(void *ctx, const struct trove_stream_batch *b)
{
    struct load *l = ctx;
    struct trove_wire_frame fr;
    for (size_t at = 0; at < b->len && l->rc == TROVE_OK; at += fr.frame_len) {
        l->rc = trove_wire_decode(l->dec, (const uint8_t *)b->data + at, b->len - at, l->buf,
                                  TROVE_WIRE_MAX_EVENTS, l->names, &fr, NULL);
        for (size_t i = 0; l->rc == TROVE_OK && i < fr.n_events; i++)
            l->rc = trove_events_push(l->ev, &l->buf[i]);
    }
    return l->rc;
}

int test_capture_load(struct trove_store *s, const char *name, struct trove_events *ev,
                      struct trove_names *names)
{
    struct trove_capture_replay_options ro;
    struct trove_stream_options so;
    struct trove_stream *st = NULL;
    struct trove_stream_sink sink;
    struct trove_diag diag = {0};
    struct load l = {0};
    int rc;

    l.ev = ev;
    l.names = names;
    if ((rc = trove_wire_decoder_new(&l.dec)) != TROVE_OK)
        goto out;
    if (!(l.buf = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *l.buf))) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    trove_stream_options_default(&so);
    so.send_mode = TROVE_STREAM_SEND_INLINE;
    if ((rc = trove_stream_new(trove_store_backend(s), &so, &st)) != TROVE_OK)
        goto out;
    memset(&ro, 0, sizeof ro);
    ro.to_ns = UINT64_MAX;
    ro.wire = TROVE_WIRE_PACKED;
    memset(&sink, 0, sizeof sink);
    sink.send = load_send;
    sink.ctx = &l;
    rc = trove_capture_replay(s, name, st, &ro, &sink, NULL, &diag);
    if (rc == TROVE_ERR_SEND)
        rc = l.rc;
out:
    if (rc != TROVE_OK)
        fprintf(stderr, "reading capture %s: %s %s\n", name, trove_strerror(rc), diag.msg);
    trove_stream_free(st);
    trove_wire_decoder_free(l.dec);
    free(l.buf);
    return rc;
}

/* ---- what every object backend answers ---- */

void test_backend_limits(struct trove_backend *be, const struct trove_digest *d, size_t big_n)
{
    struct trove_bytes got = {0};
    struct trove_digest other;
    uint8_t one = 0x42;
    uint64_t size = 99;

    /* max_len: refused over, accepted at exactly the size; out is emptied on refusal. */
    CHECK_EQ_INT(trove_backend_get(be, d, &got, big_n - 1), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_backend_get(be, d, &got, 0), TROVE_ERR_LIMIT);
    trove_digest_of(&one, 1, &other);
    CHECK_EQ_INT(trove_backend_get(be, &other, &got, 0), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(trove_backend_get(be, &other, &got, 1), TROVE_OK);
    CHECK(got.len == 1 && got.ptr[0] == one);
    trove_digest_of("", 0, &other);
    got.len = 0;
    CHECK_EQ_INT(trove_backend_get(be, &other, &got, 0), TROVE_OK);
    CHECK_EQ_INT(got.len, 0);

    /* Missing objects. */
    trove_digest_of("never stored", 12, &other);
    CHECK_EQ_INT(trove_bytes_append(&got, "xxxxx", 5), TROVE_OK);
    CHECK_EQ_INT(trove_backend_get(be, &other, &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_backend_size(be, &other, &size), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_delete(be, &other), TROVE_ERR_NOTFOUND);
    trove_bytes_free(&got);
}
