/*
 * test_backend_s3.c: the S3 object backend against a real S3 API — OpenStack Swift with its
 * s3api middleware, which checks every SigV4 signature and body hash. With TROVE_S3_ENDPOINT
 * (and the credentials) in the environment the test uses that server; without, it starts
 * one with tests/s3/up.sh and stops it with tests/s3/down.sh at the end, and skips (77)
 * only when up.sh says Swift is not installed.
 *
 * Each run works in a bucket of its own that does not exist yet (the first write creates
 * it). The cases mirror test_backend.c's on fs where the semantics are the backend's:
 * round trips (empty, 1 byte, 3 MiB), put-if-absent never overwriting, the limit on get,
 * missing objects, delete, the zero digest; list with continuation (a page of 7 keys over
 * 60 objects) and stopping early; staged puts invisible until publish; gets from 4 threads
 * at once; packs (test_packs: request counts of publish, index loads, gets, sizes and
 * deletes, a handle that loaded the index before the publish, the .dead record, the
 * rewrite of a half-dead pack and the last delete; test_many_packs: an index bigger than
 * the tail GET, and a dozen packs loaded at once; test_bad_packs: damaged packs reported
 * unreadable, never guessed at, and a .dead record left without its pack); and what only
 * S3 has: a wrong secret refused with S3's SignatureDoesNotMatch in
 * the message, an unreachable endpoint retried and then reported, the proxy frozen mid-use
 * (timeouts, retries, a clear error, the objects intact after), credentials from a
 * profile of a credentials file, bad URLs. Last, `s3cmd` (when installed) lists and
 * downloads what trove wrote and `xxhsum -H2` of every object, and of a pack, equals its
 * name.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/s3/backend_s3.h"
#include "testutil.h"
#include "trove/backend.h"
#include "trove/testing.h"

static char bucket_url[128]; /* s3://trove-test-<random>/some/prefix */
static char bucket[64];
static int started; /* this test ran up.sh */

static void fill_random(uint8_t *p, size_t n, uint64_t *seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(test_rand(seed) >> 24);
}

/* Run tests/s3/up.sh and take its export lines into the environment. 0 ok, 77 skip. */
static int start_server(void)
{
    char line[1024];
    FILE *p = popen(TROVE_SOURCE_DIR "/tests/s3/up.sh", "r");
    int n = 0, st;

    if (!p)
        return 1;
    while (fgets(line, sizeof line, p)) {
        char *eq, *v;
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "export ", 7) != 0 || !(eq = strchr(line + 7, '=')))
            continue;
        *eq = '\0';
        v = eq + 1;
        setenv(line + 7, v, 1);
        n++;
    }
    st = pclose(p);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
        return 77;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || n < 5) {
        fprintf(stderr, "tests/s3/up.sh failed (status %d)\n", st);
        return 1;
    }
    started = 1;
    return 0;
}

static void stop_server(void)
{
    if (started && system(TROVE_SOURCE_DIR "/tests/s3/down.sh") != 0)
        fprintf(stderr, "tests/s3/down.sh failed\n");
}

static struct trove_backend *open_s3(const char *url, const struct trove_s3_options *opt)
{
    struct trove_backend *be = NULL;
    CHECK_EQ_INT(trove_backend_s3_open(url, opt, &be), TROVE_OK);
    return be;
}

static void test_basic(void)
{
    struct trove_backend *be = open_s3(bucket_url, NULL);
    struct trove_digest d, zero = {{0}};
    struct trove_bytes got = {0};
    uint64_t seed = 7, size = 0, requests = 0, requests2 = 0;
    size_t big_n = 3u << 20;
    uint8_t *big = malloc(big_n), one = 0x42;
    int created;

    if (!be || !big) {
        free(big);
        trove_backend_close(be);
        return;
    }
    fill_random(big, big_n, &seed);
    /* The bucket does not exist yet: listing it is empty, the first put creates it. */
    CHECK_EQ_INT(trove_backend_list(be, NULL, NULL), TROVE_ERR_INVALID);
    {
        const void *objs[3] = {"", &one, big};
        size_t lens[3] = {0, 1, big_n};
        for (int i = 0; i < 3; i++) {
            trove_digest_of(objs[i], lens[i], &d);
            created = -1;
            CHECK_EQ_INT(trove_backend_put(be, &d, objs[i], lens[i], &created), TROVE_OK);
            CHECK_EQ_INT(created, 1);
            CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_OK);
            CHECK(got.len == lens[i] && (lens[i] == 0 || memcmp(got.ptr, objs[i], lens[i]) == 0));
            CHECK_EQ_INT(trove_backend_size(be, &d, &size), TROVE_OK);
            CHECK_EQ_INT(size, lens[i]);
        }
    }
    /* put-if-absent: a second put is created = 0 and does not replace the bytes. */
    trove_digest_of(big, big_n, &d);
    created = -1;
    CHECK_EQ_INT(trove_backend_put(be, &d, big, big_n, &created), TROVE_OK);
    CHECK_EQ_INT(created, 0);
    CHECK_EQ_INT(trove_backend_s3_stats(be, &requests, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_backend_put(be, &d, "forged", 6, &created), TROVE_OK);
    CHECK_EQ_INT(created, 0);
    CHECK_EQ_INT(trove_backend_s3_stats(be, &requests2, NULL), TROVE_OK);
    CHECK_EQ_INT(requests2 - requests, 1); /* present: one HEAD, no upload */
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, big_n), TROVE_OK);
    CHECK(got.len == big_n && memcmp(got.ptr, big, big_n) == 0);

    test_backend_limits(be, &d, big_n);

    /* Delete, then everything says not found; a put brings it back. */
    CHECK_EQ_INT(trove_backend_delete(be, &d), TROVE_OK);
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_size(be, &d, &size), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_delete(be, &d), TROVE_ERR_NOTFOUND);
    created = -1;
    CHECK_EQ_INT(trove_backend_put(be, &d, big, big_n, &created), TROVE_OK);
    CHECK_EQ_INT(created, 1);

    /* The zero digest and arguments outside the contract. */
    CHECK_EQ_INT(trove_backend_put(be, &zero, "x", 1, &created), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_get(be, &zero, &got, SIZE_MAX), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_size(be, &zero, &size), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_delete(be, &zero), TROVE_ERR_INVALID);
    CHECK_EQ_INT(trove_backend_put(be, &d, NULL, 1, NULL), TROVE_ERR_INVALID);

    trove_bytes_free(&got);
    trove_backend_close(be);
    free(big);
}

/* ---- list ---------------------------------------------------------------------------- */

struct collect {
    struct trove_digest *d;
    size_t n, cap;
    int stop_after;
};

static int collect_fn(void *ctx, const struct trove_digest *d)
{
    struct collect *c = ctx;
    if (c->n < c->cap)
        c->d[c->n] = *d;
    c->n++;
    return c->stop_after && (int)c->n >= c->stop_after ? 7 : 0;
}

static int cmp_digest(const void *a, const void *b) { return memcmp(a, b, 16); }

#define LIST_N 60

static void check_list(struct trove_backend *be, const struct trove_digest *want_in, size_t n)
{
    struct trove_digest got[LIST_N + 16], want[LIST_N + 16];
    struct collect c = {got, 0, LIST_N + 16, 0};
    CHECK_EQ_INT(trove_backend_list(be, collect_fn, &c), 0);
    CHECK_EQ_INT(c.n, n);
    if (c.n != n || n > LIST_N + 16)
        return;
    memcpy(want, want_in, n * sizeof *want);
    qsort(got, n, sizeof *got, cmp_digest);
    qsort(want, n, sizeof *want, cmp_digest);
    CHECK(memcmp(got, want, n * sizeof *got) == 0);
}

/* List pages of 7 keys (continuation tokens), a stop from fn, and staged puts that become
 * visible only at publish, as one pack. Under its own prefix, so the other cases' objects
 * stay out (and the independent client checks this pack's name). */
static void test_list_and_stage(void)
{
    struct trove_s3_options opt = {0};
    struct trove_backend *be;
    struct trove_digest want[LIST_N], one[1];
    struct trove_bytes got = {0};
    struct collect c = {one, 0, 1, 1};
    char url[256];
    uint8_t buf[700];
    uint64_t seed = 99, overhead = 1, before = 0, after = 0, retried = 0;

    opt.list_page = 7;
    snprintf(url, sizeof url, "%s-list/", bucket_url); /* a trailing slash is fine */
    if (!(be = open_s3(url, &opt)))
        return;
    check_list(be, want, 0);
    for (int i = 0; i < LIST_N; i++) {
        size_t n = 2 + (size_t)(test_rand(&seed) % (sizeof buf - 2));
        fill_random(buf, n, &seed);
        buf[0] = (uint8_t)i;
        trove_digest_of(buf, n, &want[i]);
        CHECK_EQ_INT(trove_backend_stage(be, &want[i], buf, n), TROVE_OK);
    }
    /* Nothing is visible before publish. */
    CHECK_EQ_INT(trove_backend_get(be, &want[0], &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    check_list(be, want, 0);
    CHECK_EQ_INT(trove_backend_s3_stats(be, &before, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_backend_publish(be, &overhead), TROVE_OK);
    /* All 60 in one pack: its index and footer are the overhead, and its PUT (no HEAD: the
     * name is new content) is the one request (a clean server: no retries). */
    CHECK_EQ_INT(overhead, 32 * LIST_N + 32);
    CHECK_EQ_INT(trove_backend_s3_stats(be, &after, &retried), TROVE_OK);
    CHECK_EQ_INT(after - before - retried, 1);
    CHECK_EQ_INT(trove_backend_publish(be, &overhead), TROVE_OK); /* nothing staged */
    check_list(be, want, LIST_N);
    for (int i = 0; i < LIST_N; i++)
        CHECK_EQ_INT(trove_backend_get(be, &want[i], &got, SIZE_MAX), TROVE_OK);
    CHECK_EQ_INT(trove_backend_list(be, collect_fn, &c), 7); /* fn's nonzero stops it */
    CHECK_EQ_INT(c.n, 1);
    trove_bytes_free(&got);
    trove_backend_close(be);
}

/* ---- packs --------------------------------------------------------------------------- */

/* Requests be has sent so far, retries apart (a clean server has none). */
static uint64_t sent(struct trove_backend *be)
{
    uint64_t requests = 0, retries = 0;
    CHECK_EQ_INT(trove_backend_s3_stats(be, &requests, &retries), TROVE_OK);
    return requests - retries;
}

struct keys {
    char name[8][64];
    int n;
};

static int key_fn(void *ctx, const char *rest, int64_t mtime)
{
    struct keys *k = ctx;
    (void)mtime;
    if (k->n < 8)
        snprintf(k->name[k->n], sizeof k->name[0], "%s", rest);
    k->n++;
    return 0;
}

/* The keys under PREFIX/packs/: the packs and their .dead records. */
static struct keys pack_keys(struct trove_backend *be)
{
    struct keys k;
    memset(&k, 0, sizeof k);
    CHECK_EQ_INT(trove__s3_key_list(be, "packs/", key_fn, &k), TROVE_OK);
    return k;
}

#define PACK_N 60
#define SMALL 1000

/* The objects of the pack case: PACK_N small ones, one more that is also put loose, and a
 * big one that stays loose. */
struct pack_objs {
    uint8_t small[PACK_N + 1][SMALL];
    struct trove_digest d[PACK_N + 2]; /* [PACK_N]: also loose; [PACK_N + 1]: the big one */
    int alive[PACK_N + 2];
    uint8_t *big;
    size_t big_n;
};

static const uint8_t *obj_bytes(const struct pack_objs *o, int i, size_t *len)
{
    *len = i == PACK_N + 1 ? o->big_n : SMALL;
    return i == PACK_N + 1 ? o->big : o->small[i];
}

/* Every live object of o reads back intact through be, the others are absent, and a list
 * names each live one once. */
static void check_objs(struct trove_backend *be, const struct pack_objs *o)
{
    struct trove_digest live[PACK_N + 2];
    struct trove_bytes got = {0};
    size_t n = 0, len;

    for (int i = 0; i < PACK_N + 2; i++) {
        const uint8_t *want = obj_bytes(o, i, &len);
        if (!o->alive[i]) {
            CHECK_EQ_INT(trove_backend_get(be, &o->d[i], &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
            continue;
        }
        live[n++] = o->d[i];
        CHECK_EQ_INT(trove_backend_get(be, &o->d[i], &got, SIZE_MAX), TROVE_OK);
        CHECK(got.len == len && memcmp(got.ptr, want, len) == 0);
    }
    check_list(be, live, n);
    trove_bytes_free(&got);
}

struct aged {
    int n, unknown;
};

static int aged_fn(void *ctx, const struct trove_digest *d, int64_t mtime)
{
    struct aged *a = ctx;
    (void)d;
    a->n++;
    a->unknown += mtime <= 0;
    return 0;
}

/* Publish: PACK_N + 1 small objects go up as one pack in one PUT, the big one loose. */
static void packs_publish(struct trove_backend *w, struct pack_objs *o, char first[64])
{
    uint64_t before, overhead = 0;
    struct keys k;

    /* One object put loose first, then staged too; one staged twice. */
    CHECK_EQ_INT(trove_backend_put(w, &o->d[PACK_N], o->small[PACK_N], SMALL, NULL), TROVE_OK);
    for (int i = 0; i <= PACK_N; i++)
        CHECK_EQ_INT(trove_backend_stage(w, &o->d[i], o->small[i], SMALL), TROVE_OK);
    CHECK_EQ_INT(trove_backend_stage(w, &o->d[0], o->small[0], SMALL), TROVE_OK);
    CHECK_EQ_INT(trove_backend_stage(w, &o->d[PACK_N + 1], o->big, o->big_n), TROVE_OK);
    CHECK_EQ_INT(trove__s3_staged_bytes(w), (PACK_N + 1) * SMALL + o->big_n);
    before = sent(w);
    CHECK_EQ_INT(trove_backend_publish(w, &overhead), TROVE_OK);
    /* The pack's PUT (no HEAD), and the big one's HEAD and PUT: 3 requests. */
    CHECK_EQ_INT(sent(w) - before, 3);
    CHECK_EQ_INT(overhead, 32 * (PACK_N + 1) + 32);
    CHECK_EQ_INT(trove__s3_staged_bytes(w), 0);
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 1);
    CHECK_EQ_INT(strlen(k.name[0]), 32);
    snprintf(first, 64, "%s", k.name[0]);
    /* Staged again once in a known pack: not staged, and publish sends nothing. */
    before = sent(w);
    CHECK_EQ_INT(trove_backend_stage(w, &o->d[3], o->small[3], SMALL), TROVE_OK);
    CHECK_EQ_INT(trove__s3_staged_bytes(w), 0);
    CHECK_EQ_INT(trove_backend_publish(w, NULL), TROVE_OK);
    CHECK_EQ_INT(sent(w) - before, 0);
}

/* Reads through a handle that has not loaded the pack list (a fresh one) and through one
 * that loaded it before the publish (early). */
static void packs_read(struct trove_backend *fresh, struct trove_backend *early,
                       struct pack_objs *o)
{
    struct trove_bytes got = {0};
    struct aged a = {0, 0};
    uint64_t before, size = 0;

    /* The first size lists the packs and reads the one pack's tail: 2 requests; every
     * other size of a packed object, none. */
    before = sent(fresh);
    for (int i = 0; i <= PACK_N; i++) {
        CHECK_EQ_INT(trove_backend_size(fresh, &o->d[i], &size), TROVE_OK);
        CHECK_EQ_INT(size, SMALL);
    }
    CHECK_EQ_INT(sent(fresh) - before, 2);
    /* Each get of a packed object: one ranged GET. */
    before = sent(fresh);
    for (int i = 0; i <= PACK_N; i++) {
        CHECK_EQ_INT(trove_backend_get(fresh, &o->d[i], &got, SIZE_MAX), TROVE_OK);
        CHECK(got.len == SMALL && memcmp(got.ptr, o->small[i], SMALL) == 0);
    }
    CHECK_EQ_INT(sent(fresh) - before, PACK_N + 1);
    /* The cap, checked before any request. */
    before = sent(fresh);
    CHECK_EQ_INT(trove_backend_get(fresh, &o->d[0], &got, SMALL - 1), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_backend_get(fresh, &o->d[0], &got, 0), TROVE_ERR_LIMIT);
    CHECK_EQ_INT(sent(fresh) - before, 0);
    CHECK_EQ_INT(trove_backend_get(fresh, &o->d[0], &got, SMALL), TROVE_OK);
    CHECK_EQ_INT(got.len, SMALL);
    /* Loose and packed, each once (the one that is both too), with a time for each. */
    check_objs(fresh, o);
    CHECK_EQ_INT(trove__s3_list_aged(fresh, aged_fn, &a), TROVE_OK);
    CHECK_EQ_INT(a.n, PACK_N + 2);
    CHECK_EQ_INT(a.unknown, 0);
    /* The early handle misses: a loose GET (404), a listing, the new pack's tail, then the
     * ranged GET: 4 requests. From then on, one each. */
    before = sent(early);
    CHECK_EQ_INT(trove_backend_get(early, &o->d[1], &got, SIZE_MAX), TROVE_OK);
    CHECK(got.len == SMALL && memcmp(got.ptr, o->small[1], SMALL) == 0);
    CHECK_EQ_INT(sent(early) - before, 4);
    before = sent(early);
    for (int i = 0; i <= PACK_N; i++) {
        CHECK_EQ_INT(trove_backend_get(early, &o->d[i], &got, SIZE_MAX), TROVE_OK);
        CHECK(got.len == SMALL && memcmp(got.ptr, o->small[i], SMALL) == 0);
    }
    CHECK_EQ_INT(sent(early) - before, PACK_N + 1);
    trove_bytes_free(&got);
}

/* The .dead record of pack hex: n sorted digests, want among them. */
static void check_dead(struct trove_backend *be, const char *hex, size_t n,
                       const struct trove_digest *want)
{
    struct trove_bytes rec = {0};
    char rel[64];
    int found = 0;

    snprintf(rel, sizeof rel, "packs/%s.dead", hex);
    CHECK_EQ_INT(trove__s3_key_get(be, rel, &rec, 1u << 20), TROVE_OK);
    CHECK_EQ_INT(rec.len, 16 * n);
    for (size_t k = 0; rec.len == 16 * n && k < n; k++) {
        CHECK(k == 0 || memcmp(rec.ptr + 16 * (k - 1), rec.ptr + 16 * k, 16) < 0);
        found |= memcmp(rec.ptr + 16 * k, want->b, 16) == 0;
    }
    CHECK(found);
    trove_bytes_free(&rec);
}

/* Deletes: the .dead record, the loose copy of the one that is both, the rewrite of a pack
 * more than half dead (seen from a handle that still has the old pack), and the pack's
 * delete once every entry is dead. */
static void packs_delete(struct trove_backend *w, const char *url, struct pack_objs *o,
                         const char *first)
{
    struct trove_backend *fresh = NULL, *stale = NULL;
    struct trove_bytes got = {0};
    uint64_t before, size;
    char rel[64], hex[33];
    struct keys k;

    /* The first: one PUT of the record, one DELETE of any loose copy. */
    before = sent(w);
    CHECK_EQ_INT(trove_backend_delete(w, &o->d[1]), TROVE_OK);
    CHECK_EQ_INT(sent(w) - before, 2);
    o->alive[1] = 0;
    CHECK_EQ_INT(trove_backend_get(w, &o->d[1], &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_size(w, &o->d[1], &size), TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(trove_backend_delete(w, &o->d[1]), TROVE_ERR_NOTFOUND);
    check_dead(w, first, 1, &o->d[1]);
    /* The one also loose: gone from both places. */
    CHECK_EQ_INT(trove_backend_delete(w, &o->d[PACK_N]), TROVE_OK);
    o->alive[PACK_N] = 0;
    trove_digest_hex(&o->d[PACK_N], hex);
    snprintf(rel, sizeof rel, "objects/%s", hex);
    CHECK_EQ_INT(trove__s3_key_exists(w, rel), 0);
    /* A fresh handle reads the record with the tail. */
    if ((fresh = open_s3(url, NULL)))
        check_objs(fresh, o);
    stale = fresh; /* it keeps the pack that the rewrite below replaces */
    /* 61 entries of 1,000 bytes: with 31 live the pack is not rewritten yet ... */
    for (int i = 2; i < 30; i++) {
        CHECK_EQ_INT(trove_backend_delete(w, &o->d[i]), TROVE_OK);
        o->alive[i] = 0;
    }
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 2); /* the pack and its record */
    check_dead(w, first, 30, &o->d[29]);
    /* ... with 30 live it is: the record's PUT, a GET of the pack, the new pack's PUT, the
     * old pack's and its record's DELETEs, the loose copy's DELETE: 6 requests. */
    before = sent(w);
    CHECK_EQ_INT(trove_backend_delete(w, &o->d[30]), TROVE_OK);
    o->alive[30] = 0;
    CHECK_EQ_INT(sent(w) - before, 6);
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 1);
    CHECK(strcmp(k.name[0], first) != 0 && strlen(k.name[0]) == 32);
    /* The stale handle's ranged GET is a 404: a loose GET (404), a listing, the new pack's
     * tail and the ranged GET there: 5 requests. */
    if (stale) {
        before = sent(stale);
        CHECK_EQ_INT(trove_backend_get(stale, &o->d[31], &got, SIZE_MAX), TROVE_OK);
        CHECK(got.len == SMALL && memcmp(got.ptr, o->small[31], SMALL) == 0);
        CHECK_EQ_INT(sent(stale) - before, 5);
        check_objs(stale, o);
    }
    /* Every entry dead: no pack and no record left (rewrites on the way). */
    for (int i = 0; i < PACK_N; i++) {
        if (!o->alive[i])
            continue;
        CHECK_EQ_INT(trove_backend_delete(w, &o->d[i]), TROVE_OK);
        o->alive[i] = 0;
    }
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 0);
    trove_backend_close(fresh);
    if ((fresh = open_s3(url, NULL)))
        check_objs(fresh, o); /* the big one alone */
    trove_backend_close(fresh);
    trove_bytes_free(&got);
}

static void test_packs(void)
{
    struct trove_backend *w = NULL, *early = NULL, *fresh = NULL;
    struct pack_objs *o = calloc(1, sizeof *o);
    char url[256], first[64] = "";
    uint64_t seed = 4242;

    snprintf(url, sizeof url, "%s-packs", bucket_url);
    if (!o || !(w = open_s3(url, NULL)) || !(early = open_s3(url, NULL)))
        goto out;
    o->big_n = (1u << 20) + 123; /* at least 1 MiB: loose */
    if (!(o->big = malloc(o->big_n)))
        goto out;
    fill_random(o->big, o->big_n, &seed);
    trove_digest_of(o->big, o->big_n, &o->d[PACK_N + 1]);
    for (int i = 0; i <= PACK_N; i++) {
        fill_random(o->small[i], SMALL, &seed);
        trove_digest_of(o->small[i], SMALL, &o->d[i]);
    }
    for (int i = 0; i < PACK_N + 2; i++)
        o->alive[i] = 1;
    check_list(early, o->d, 0); /* loads the (empty) pack list before the publish */
    packs_publish(w, o, first);
    if ((fresh = open_s3(url, NULL)))
        packs_read(fresh, early, o);
    packs_delete(w, url, o, first);
out:
    trove_backend_close(fresh);
    trove_backend_close(early);
    trove_backend_close(w);
    if (o)
        free(o->big);
    free(o);
}

#define TINY_N 2100 /* 2100 * 32 + 32 bytes of index: more than the 64 KiB tail GET */
#define LONE_N 11

/* A pack whose index is bigger than the tail GET (a second ranged GET for the rest), and
 * many packs, loaded by one handle at once: one listing, one tail each, one rest. */
static void test_many_packs(void)
{
    struct trove_backend *w, *r = NULL;
    struct trove_digest *d = calloc(TINY_N + LONE_N, sizeof *d);
    struct trove_bytes got = {0};
    struct collect c = {NULL, 0, 0, 0};
    char url[256], text[64];
    uint64_t before, size = 0;
    struct keys k;

    snprintf(url, sizeof url, "%s-many", bucket_url);
    if (!d || !(w = open_s3(url, NULL))) {
        free(d);
        return;
    }
    for (int i = 0; i < TINY_N + LONE_N; i++) {
        snprintf(text, sizeof text, "tiny %d", i);
        trove_digest_of(text, strlen(text), &d[i]);
        CHECK_EQ_INT(trove_backend_stage(w, &d[i], text, strlen(text)), TROVE_OK);
        if (i >= TINY_N - 1) /* the tiny ones in one pack, then one pack each */
            CHECK_EQ_INT(trove_backend_publish(w, NULL), TROVE_OK);
    }
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 1 + LONE_N);
    if (!(r = open_s3(url, NULL)))
        goto out;
    before = sent(r);
    CHECK_EQ_INT(trove_backend_size(r, &d[0], &size), TROVE_OK);
    CHECK_EQ_INT(sent(r) - before, 1 + (1 + LONE_N) + 1);
    before = sent(r);
    for (int i = 0; i < TINY_N + LONE_N; i++) {
        snprintf(text, sizeof text, "tiny %d", i);
        CHECK_EQ_INT(trove_backend_size(r, &d[i], &size), TROVE_OK);
        CHECK_EQ_INT(size, strlen(text));
    }
    CHECK_EQ_INT(sent(r) - before, 0);
    for (int i = 0; i < TINY_N + LONE_N; i += i < TINY_N - 1 ? 699 : 1) {
        snprintf(text, sizeof text, "tiny %d", i);
        CHECK_EQ_INT(trove_backend_get(r, &d[i], &got, SIZE_MAX), TROVE_OK);
        CHECK(got.len == strlen(text) && memcmp(got.ptr, text, got.len) == 0);
    }
    CHECK_EQ_INT(trove_backend_list(r, collect_fn, &c), 0);
    CHECK_EQ_INT(c.n, TINY_N + LONE_N);
out:
    trove_bytes_free(&got);
    trove_backend_close(r);
    trove_backend_close(w);
    free(d);
}

static int bad_fn(void *ctx, const char *name, const char *why)
{
    CHECK(strncmp(name, "packs/", 6) == 0 && strlen(name) == 38);
    CHECK(why && why[0]);
    return key_fn(ctx, name, 0);
}

/* The good pack's objects all deleted, and a .dead record left behind (as a DELETE that
 * failed after the pack's would leave it): a handle that stages the same objects again
 * writes a pack of the same name, and deletes the record, which would hide them. */
static void bad_packs_orphan(const char *url, struct trove_backend *w,
                             const struct trove_digest *d, const char *name)
{
    struct trove_backend *again = NULL, *r = NULL;
    char rel[96], text[64];
    uint64_t before;
    struct keys k;

    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(trove_backend_delete(w, &d[i]), TROVE_OK);
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 0);
    snprintf(rel, sizeof rel, "packs/%s.dead", name);
    CHECK_EQ_INT(trove__s3_key_put(w, rel, d[0].b, 16), TROVE_OK);
    if (!(again = open_s3(url, NULL)))
        return;
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "object %d of the bad-packs case", i);
        CHECK_EQ_INT(trove_backend_stage(again, &d[i], text, strlen(text)), TROVE_OK);
    }
    before = sent(again);
    CHECK_EQ_INT(trove_backend_publish(again, NULL), TROVE_OK);
    /* The pack's PUT and the record's DELETE (the listing came with the first stage, which
     * asks the quarantine). */
    CHECK_EQ_INT(sent(again) - before, 2);
    k = pack_keys(again);
    CHECK_EQ_INT(k.n, 1);
    CHECK(strcmp(k.name[0], name) == 0);
    if ((r = open_s3(url, NULL)))
        check_list(r, d, 3);
    trove_backend_close(r);
    trove_backend_close(again);
}

/* Packs whose tail fails its checks (garbage bytes, an empty object, a good pack's copy
 * with a byte of its footer flipped) are reported unreadable, never a crash or a guess;
 * the good pack's objects still read; with remove they are deleted. */
static void test_bad_packs(void)
{
    struct trove_backend *w, *r = NULL;
    struct trove_digest d[3], name;
    struct trove_bytes pack = {0}, got = {0};
    struct keys k, bad;
    char url[256], rel[96], hex[33], text[64];
    uint8_t junk[100];

    snprintf(url, sizeof url, "%s-bad", bucket_url);
    if (!(w = open_s3(url, NULL)))
        return;
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "object %d of the bad-packs case", i);
        trove_digest_of(text, strlen(text), &d[i]);
        CHECK_EQ_INT(trove_backend_stage(w, &d[i], text, strlen(text)), TROVE_OK);
    }
    CHECK_EQ_INT(trove_backend_publish(w, NULL), TROVE_OK);
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 1);
    snprintf(rel, sizeof rel, "packs/%s", k.name[0]);
    CHECK_EQ_INT(trove__s3_key_get(w, rel, &pack, 1u << 20), TROVE_OK);
    CHECK(pack.len > 32);
    memset(junk, 0xab, sizeof junk);
    trove_digest_of(junk, sizeof junk, &name);
    trove_digest_hex(&name, hex);
    snprintf(rel, sizeof rel, "packs/%s", hex);
    CHECK_EQ_INT(trove__s3_key_put(w, rel, junk, sizeof junk), TROVE_OK);
    trove_digest_of("empty", 5, &name);
    trove_digest_hex(&name, hex);
    snprintf(rel, sizeof rel, "packs/%s", hex);
    CHECK_EQ_INT(trove__s3_key_put(w, rel, "", 0), TROVE_OK);
    if (pack.len > 32) {
        pack.ptr[pack.len - 1] ^= 1; /* the footer's checksum */
        trove_digest_of(pack.ptr, pack.len, &name);
        trove_digest_hex(&name, hex);
        snprintf(rel, sizeof rel, "packs/%s", hex);
        CHECK_EQ_INT(trove__s3_key_put(w, rel, pack.ptr, pack.len), TROVE_OK);
    }
    if (!(r = open_s3(url, NULL)))
        goto out;
    for (int i = 0; i < 3; i++) {
        snprintf(text, sizeof text, "object %d of the bad-packs case", i);
        CHECK_EQ_INT(trove_backend_get(r, &d[i], &got, SIZE_MAX), TROVE_OK);
        CHECK(got.len == strlen(text) && memcmp(got.ptr, text, got.len) == 0);
    }
    check_list(r, d, 3);
    memset(&bad, 0, sizeof bad);
    CHECK_EQ_INT(trove_backend_unreadable(r, 0, bad_fn, &bad), TROVE_OK);
    CHECK_EQ_INT(bad.n, 3);
    memset(&bad, 0, sizeof bad);
    CHECK_EQ_INT(trove_backend_unreadable(r, 1, bad_fn, &bad), TROVE_OK);
    CHECK_EQ_INT(bad.n, 3);
    k = pack_keys(w);
    CHECK_EQ_INT(k.n, 1); /* the good one */
    trove_backend_close(r);
    if (!(r = open_s3(url, NULL)))
        goto out;
    memset(&bad, 0, sizeof bad);
    CHECK_EQ_INT(trove_backend_unreadable(r, 0, bad_fn, &bad), TROVE_OK);
    CHECK_EQ_INT(bad.n, 0);
    check_list(r, d, 3);
    bad_packs_orphan(url, w, d, k.name[0]);
out:
    trove_bytes_free(&pack);
    trove_bytes_free(&got);
    trove_backend_close(r);
    trove_backend_close(w);
}

/* ---- threads ------------------------------------------------------------------------- */

struct reader {
    struct trove_backend *be;
    const struct trove_digest *d;
    int n, bad;
};

static void *reader_main(void *arg)
{
    struct reader *r = arg;
    struct trove_bytes got = {0};
    for (int k = 0; k < 20; k++)
        for (int i = 0; i < r->n; i++)
            r->bad += trove_backend_get(r->be, &r->d[i], &got, SIZE_MAX) != TROVE_OK;
    trove_bytes_free(&got);
    return NULL;
}

static void test_threads(void)
{
    enum { N = 8, T = 4 };
    struct trove_backend *be = open_s3(bucket_url, NULL);
    struct trove_digest d[N];
    struct reader r[T];
    pthread_t th[T];
    char text[64];

    if (!be)
        return;
    for (int i = 0; i < N; i++) {
        snprintf(text, sizeof text, "object %d of the threads case", i);
        trove_digest_of(text, strlen(text), &d[i]);
        CHECK_EQ_INT(trove_backend_put(be, &d[i], text, strlen(text), NULL), TROVE_OK);
    }
    for (int t = 0; t < T; t++) {
        r[t] = (struct reader){be, d, N, 0};
        CHECK(pthread_create(&th[t], NULL, reader_main, &r[t]) == 0);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        CHECK_EQ_INT(r[t].bad, 0);
    }
    trove_backend_close(be);
}

/* ---- asynchronous gets --------------------------------------------------------------- */

enum { AN = 40 };

struct async_gets {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ended, rc[AN + 4];
    struct trove_bytes b[AN + 4];
};

struct async_one {
    struct async_gets *a;
    int i;
};

static void async_ended(void *ctx, int rc)
{
    struct async_one *o = ctx;
    pthread_mutex_lock(&o->a->mu);
    o->a->rc[o->i] = rc;
    o->a->ended++;
    pthread_cond_signal(&o->a->cv);
    pthread_mutex_unlock(&o->a->mu);
}

/* Start every get of d[0..n) (limits lim) on be at once, then wait for them all; a get
 * refused at its start has that refusal as its answer. */
static void async_run(struct trove_backend *be, const struct trove_digest *d, const size_t *lim,
                      int n, struct async_gets *a)
{
    struct async_one o[AN + 4];
    int nstart = 0;

    a->ended = 0;
    for (int i = 0; i < n; i++) {
        o[i] = (struct async_one){a, i};
        a->b[i].len = 0;
        a->rc[i] = 1;
        int rc = trove_backend_get_start(be, &d[i], &a->b[i], lim[i], async_ended, &o[i]);
        if (rc == TROVE_OK)
            nstart++;
        else /* refused before it began (a packed object over its limit): its answer */
            a->rc[i] = rc;
    }
    pthread_mutex_lock(&a->mu);
    while (a->ended < nstart)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

/*
 * Gets in flight at once on the request engine: packed objects (ranged GETs, the first of
 * them loading the index), a loose one, one missing and one over its limit, each ending
 * once with what trove_backend_get says; then the same through the fault wrapper, whose
 * latency is waited out on its timer and not on the engine.
 */
static void test_async(void)
{
    struct trove_backend *w = open_s3(bucket_url, NULL), *r = NULL, *f = NULL;
    struct trove_fault_options fo = {.latency_us = 20000};
    struct async_gets a = {.ended = 0};
    struct trove_digest d[AN + 4];
    size_t lim[AN + 4], big_len = TROVE__S3_PACK_OBJECT_MAX + 5;
    uint8_t *big = malloc(big_len);
    char text[AN][64];
    uint64_t seed = 77, before, after;
    int n = AN + 3;

    pthread_mutex_init(&a.mu, NULL);
    pthread_cond_init(&a.cv, NULL);
    memset(a.b, 0, sizeof a.b);
    if (!w || !big)
        goto out;
    CHECK_EQ_INT(trove_backend_get_async(w), 1);
    for (int i = 0; i < AN; i++) {
        snprintf(text[i], sizeof text[i], "object %d of the asynchronous case", i);
        trove_digest_of(text[i], strlen(text[i]), &d[i]);
        CHECK_EQ_INT(trove_backend_stage(w, &d[i], text[i], strlen(text[i])), TROVE_OK);
        lim[i] = SIZE_MAX;
    }
    CHECK_EQ_INT(trove_backend_publish(w, NULL), TROVE_OK);
    fill_random(big, big_len, &seed);
    trove_digest_of(big, big_len, &d[AN]); /* loose: over the packed size */
    CHECK_EQ_INT(trove_backend_put(w, &d[AN], big, big_len, NULL), TROVE_OK);
    lim[AN] = SIZE_MAX;
    trove_digest_of("never stored", 12, &d[AN + 1]);
    lim[AN + 1] = SIZE_MAX;
    d[AN + 2] = d[3];
    lim[AN + 2] = strlen(text[3]) - 1;

    r = open_s3(bucket_url, NULL); /* a fresh handle: the index not loaded yet */
    if (!r)
        goto out;
    async_run(r, d, lim, n, &a);
    for (int i = 0; i < AN; i++) {
        CHECK_EQ_INT(a.rc[i], TROVE_OK);
        CHECK(a.b[i].len == strlen(text[i]) && !memcmp(a.b[i].ptr, text[i], a.b[i].len));
    }
    CHECK_EQ_INT(a.rc[AN], TROVE_OK);
    CHECK(a.b[AN].len == big_len && !memcmp(a.b[AN].ptr, big, big_len));
    CHECK_EQ_INT(a.rc[AN + 1], TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(a.b[AN + 1].len, 0);
    CHECK_EQ_INT(a.rc[AN + 2], TROVE_ERR_LIMIT);
    CHECK_EQ_INT(a.b[AN + 2].len, 0);

    /* One request per get now that the index is loaded. */
    CHECK_EQ_INT(trove_backend_s3_stats(r, &before, NULL), TROVE_OK);
    async_run(r, d, lim, AN + 1, &a);
    CHECK_EQ_INT(trove_backend_s3_stats(r, &after, NULL), TROVE_OK);
    CHECK_EQ_INT(after - before, AN + 1);

    /* Through the fault wrapper: asynchronous too, the same answers. */
    CHECK_EQ_INT(trove_backend_fault_wrap(r, &fo, &f), TROVE_OK);
    if (!f)
        goto out;
    CHECK_EQ_INT(trove_backend_get_async(f), 1);
    async_run(f, d, lim, n, &a);
    for (int i = 0; i < AN; i++)
        CHECK(a.rc[i] == TROVE_OK && a.b[i].len == strlen(text[i]));
    CHECK_EQ_INT(a.rc[AN], TROVE_OK);
    CHECK_EQ_INT(a.rc[AN + 1], TROVE_ERR_NOTFOUND);
    CHECK_EQ_INT(a.rc[AN + 2], TROVE_ERR_LIMIT);
    {
        struct trove_fault_stats fst;
        CHECK_EQ_INT(trove_backend_fault_stats(f, &fst), TROVE_OK);
        CHECK_EQ_INT(fst.gets, (uint64_t)n);
        uint64_t want = big_len;
        for (int i = 0; i < AN; i++)
            want += strlen(text[i]);
        CHECK_EQ_INT(fst.bytes, want);
    }
out:
    trove_backend_close(f);
    trove_backend_close(r);
    trove_backend_close(w);
    for (int i = 0; i < AN + 4; i++)
        trove_bytes_free(&a.b[i]);
    pthread_cond_destroy(&a.cv);
    pthread_mutex_destroy(&a.mu);
    free(big);
}

/* ---- what S3 answers ----------------------------------------------------------------- */

static void test_errors(void)
{
    struct trove_s3_options opt = {0};
    struct trove_backend *be;
    struct trove_digest d;
    struct trove_bytes got = {0};
    char msg[1024];
    uint64_t requests = 0, retries = 0;

    trove_digest_of("signed wrong", 12, &d);
    /* A wrong secret: S3's own code and message in the error. */
    opt.secret_key = "not-the-secret";
    if ((be = open_s3(bucket_url, &opt))) {
        CHECK_EQ_INT(trove_backend_put(be, &d, "signed wrong", 12, NULL), TROVE_ERR_REMOTE);
        CHECK_EQ_INT(trove_backend_s3_last_error(be, msg, sizeof msg), TROVE_OK);
        if (!strstr(msg, "SignatureDoesNotMatch") || !strstr(msg, "403") || !strstr(msg, bucket))
            fprintf(stderr, "wrong secret said: %s\n", msg);
        CHECK(strstr(msg, "SignatureDoesNotMatch") != NULL);
        CHECK(strstr(msg, "HTTP 403") != NULL);
        CHECK(strstr(msg, bucket) != NULL);
        CHECK_EQ_INT(trove_backend_s3_stats(be, &requests, &retries), TROVE_OK);
        CHECK_EQ_INT(retries, 0); /* a 403 is final */
        trove_backend_close(be);
    }
    /* Nobody listening: retried, then a message that says so. */
    memset(&opt, 0, sizeof opt);
    opt.endpoint = "http://127.0.0.1:1";
    opt.retries = 2;
    opt.timeout_ms = 2000;
    if ((be = open_s3(bucket_url, &opt))) {
        CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_ERR_REMOTE);
        CHECK_EQ_INT(trove_backend_s3_last_error(be, msg, sizeof msg), TROVE_OK);
        CHECK(strstr(msg, "after 3 attempts") != NULL);
        CHECK_EQ_INT(trove_backend_s3_stats(be, &requests, &retries), TROVE_OK);
        CHECK_EQ_INT(requests, 3);
        CHECK_EQ_INT(retries, 2);
        trove_backend_close(be);
    }
    /* Bad URLs and arguments. */
    {
        static const char *bad[] = {"", "s3://", "s3://ab", "s3://UPPER", "fs:///tmp/x",
                                    "s3://bucket/with space", "s3://bucket/a//b", "s3://-dash"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            be = (struct trove_backend *)&opt;
            CHECK_EQ_INT(trove_backend_s3_open(bad[i], NULL, &be), TROVE_ERR_INVALID);
            CHECK(be == NULL);
        }
        CHECK_EQ_INT(trove_backend_s3_open(bucket_url, NULL, NULL), TROVE_ERR_INVALID);
        CHECK_EQ_INT(trove_backend_s3_last_error(NULL, msg, sizeof msg), TROVE_ERR_INVALID);
    }
    trove_bytes_free(&got);
}

/* The proxy frozen mid-use (SIGSTOP to its process group, only of a server this test
 * started): a get times out, is retried, then fails with a message that says so; thawed,
 * the same handle reads the object intact and writes again. */
static void test_proxy_stopped(void)
{
    struct trove_s3_options opt = {0};
    struct trove_backend *be;
    struct trove_digest d;
    struct trove_bytes got = {0};
    char path[512], msg[1024];
    const char *dir = getenv("TROVE_S3_DIR");
    uint64_t requests = 0, retries = 0;
    long pid = 0;
    FILE *f;

    if (!started || !dir) {
        fprintf(stderr, "not this test's server: the stopped-proxy case is skipped\n");
        return;
    }
    snprintf(path, sizeof path, "%s/run/proxy.pid", dir);
    f = fopen(path, "r");
    CHECK(f != NULL && fscanf(f, "%ld", &pid) == 1 && pid > 1);
    if (f)
        fclose(f);
    if (pid <= 1)
        return;
    opt.retries = 2;
    opt.timeout_ms = 500;
    if (!(be = open_s3(bucket_url, &opt)))
        return;
    trove_digest_of("survives a frozen proxy", 23, &d);
    CHECK_EQ_INT(trove_backend_put(be, &d, "survives a frozen proxy", 23, NULL), TROVE_OK);
    CHECK(kill(-(pid_t)pid, SIGSTOP) == 0);
    CHECK_EQ_INT(trove_backend_s3_stats(be, &requests, &retries), TROVE_OK);
    CHECK_EQ_INT(retries, 0);
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_ERR_REMOTE);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_backend_s3_last_error(be, msg, sizeof msg), TROVE_OK);
    if (!strstr(msg, "after 3 attempts") || !strstr(msg, "imeout"))
        fprintf(stderr, "frozen proxy said: %s\n", msg);
    CHECK(strstr(msg, "after 3 attempts") != NULL);
    CHECK(strstr(msg, "imeout") != NULL || strstr(msg, "timed out") != NULL);
    CHECK_EQ_INT(trove_backend_s3_stats(be, NULL, &retries), TROVE_OK);
    CHECK_EQ_INT(retries, 2);
    CHECK(kill(-(pid_t)pid, SIGCONT) == 0);
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_OK);
    CHECK(got.len == 23 && memcmp(got.ptr, "survives a frozen proxy", 23) == 0);
    trove_digest_of("written after the thaw", 22, &d);
    CHECK_EQ_INT(trove_backend_put(be, &d, "written after the thaw", 22, NULL), TROVE_OK);
    trove_bytes_free(&got);
    trove_backend_close(be);
}

/* The Nth allocation failing: open is TROVE_ERR_NOMEM with nothing returned, until n passes
 * every allocation it makes; a stage that cannot copy leaves nothing staged, and a get
 * that cannot grow its buffer is TROVE_ERR_NOMEM with the buffer empty. */
static void test_alloc_failures(void)
{
    struct trove_backend *be;
    struct trove_digest d, other;
    struct trove_bytes got = {0};
    uint64_t n;
    int rc = TROVE_ERR_NOMEM;

    for (n = 1; n < 64 && rc == TROVE_ERR_NOMEM; n++) {
        be = (struct trove_backend *)&got;
        trove_testing_alloc_fail_at(n, 0);
        rc = trove_backend_s3_open(bucket_url, NULL, &be);
        trove_testing_alloc_fail_at(0, 0);
        if (rc == TROVE_ERR_NOMEM)
            CHECK(be == NULL);
    }
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK(n > 2); /* open does allocate, so some n failed it */
    if (rc != TROVE_OK)
        return;
    trove_digest_of("staged under pressure", 21, &d);
    trove_testing_alloc_fail_at(1, 1);
    CHECK_EQ_INT(trove_backend_stage(be, &d, "staged under pressure", 21), TROVE_ERR_NOMEM);
    trove_testing_alloc_fail_at(0, 0);
    CHECK_EQ_INT(trove_backend_publish(be, NULL), TROVE_OK); /* nothing was staged */
    CHECK_EQ_INT(trove_backend_get(be, &d, &got, SIZE_MAX), TROVE_ERR_NOTFOUND);
    trove_digest_of("read under pressure", 19, &other);
    CHECK_EQ_INT(trove_backend_put(be, &other, "read under pressure", 19, NULL), TROVE_OK);
    trove_testing_alloc_fail_at(1, 1);
    CHECK_EQ_INT(trove_backend_get(be, &other, &got, SIZE_MAX), TROVE_ERR_NOMEM);
    trove_testing_alloc_fail_at(0, 0);
    CHECK_EQ_INT(got.len, 0);
    CHECK_EQ_INT(trove_backend_get(be, &other, &got, SIZE_MAX), TROVE_OK);
    CHECK(got.len == 19 && memcmp(got.ptr, "read under pressure", 19) == 0);
    trove_bytes_free(&got);
    trove_backend_close(be);
}

/* Credentials from a profile of a credentials file when the environment has no key. */
static void test_profile(const char *dir)
{
    char path[512], *key = strdup(getenv("AWS_ACCESS_KEY_ID")),
                    *secret = strdup(getenv("AWS_SECRET_ACCESS_KEY"));
    struct trove_backend *be = NULL;
    struct trove_digest d;
    FILE *f;

    snprintf(path, sizeof path, "%s/credentials", dir);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f || !key || !secret) {
        free(key);
        free(secret);
        return;
    }
    fprintf(f, "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n"
               "# the one used\n[trove-test]\naws_access_key_id = %s\n"
               "aws_secret_access_key=%s\n",
            key, secret);
    fclose(f);
    unsetenv("AWS_ACCESS_KEY_ID");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
    setenv("AWS_PROFILE", "trove-test", 1);
    trove_digest_of("from a profile", 14, &d);
    if ((be = open_s3(bucket_url, NULL)))
        CHECK_EQ_INT(trove_backend_put(be, &d, "from a profile", 14, NULL), TROVE_OK);
    trove_backend_close(be);
    setenv("AWS_PROFILE", "no-such-profile", 1);
    be = NULL;
    CHECK_EQ_INT(trove_backend_s3_open(bucket_url, NULL, &be), TROVE_ERR_INVALID);
    unsetenv("AWS_PROFILE");
    unsetenv("AWS_SHARED_CREDENTIALS_FILE");
    setenv("AWS_ACCESS_KEY_ID", key, 1);
    setenv("AWS_SECRET_ACCESS_KEY", secret, 1);
    free(key);
    free(secret);
}

/* s3cmd (an independent client) downloads every key under s3 URL url into dir/sub, and
 * xxhsum -H2 of each file is its name: *files_out files, the count that matched returned. */
static int s3cmd_matches(const char *dir, const char *sub, const char *url, int *files_out)
{
    char cmd[4096], line[1024];
    const char *endpoint = getenv("TROVE_S3_ENDPOINT"), *host;
    FILE *p;
    int matched = 0;

    *files_out = 0;
    host = strstr(endpoint, "://");
    host = host ? host + 3 : endpoint;
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mkdir -p %s && s3cmd -q --no-ssl --host=%s --host-bucket=%s "
             "--access_key=\"$AWS_ACCESS_KEY_ID\" --secret_key=\"$AWS_SECRET_ACCESS_KEY\" "
             "--region=\"$AWS_REGION\" --config=/dev/null get --recursive "
             "'%s' %s/ >s3cmd-%s.log 2>&1 && cd %s && xxhsum -H2 * 2>/dev/null",
             dir, sub, host, host, url, sub, sub, sub);
    if (!(p = popen(cmd, "r"))) {
        CHECK(0);
        return 0;
    }
    while (fgets(line, sizeof line, p)) {
        char sum[64], name[512];
        if (sscanf(line, "%63s %511s", sum, name) != 2)
            continue;
        (*files_out)++;
        matched += strcmp(sum, name) == 0;
        if (strcmp(sum, name) != 0)
            fprintf(stderr, "xxhsum -H2 of %s is %s\n", name, sum);
    }
    CHECK_EQ_INT(pclose(p), 0);
    return matched;
}

/* An independent client: s3cmd lists and downloads every object trove wrote under the
 * prefix, and the pack of the list case, and xxhsum -H2 of each file is its name. */
static void test_independent_client(const char *dir)
{
    char url[256];
    int files = 0, matched;

    if (system("command -v s3cmd >/dev/null 2>&1 && command -v xxhsum >/dev/null 2>&1") != 0) {
        fprintf(stderr, "s3cmd or xxhsum not installed: the independent-client case is skipped\n");
        return;
    }
    snprintf(url, sizeof url, "%s/objects/", bucket_url);
    matched = s3cmd_matches(dir, "dl", url, &files);
    CHECK(files >= 10); /* the basic and threads cases' objects */
    CHECK_EQ_INT(matched, files);
    snprintf(url, sizeof url, "%s-list/packs/", bucket_url);
    matched = s3cmd_matches(dir, "packs", url, &files);
    CHECK_EQ_INT(files, 1); /* its 60 objects in one pack, named by its xxh3-128 */
    CHECK_EQ_INT(matched, 1);
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/trove_backend_s3_XXXXXX";
    int rc;

    test_init(argc, argv);
    if (!getenv("TROVE_S3_ENDPOINT")) {
        if ((rc = start_server()) != 0)
            return rc;
    }
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        stop_server();
        return 1;
    }
    {
        uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
        snprintf(bucket, sizeof bucket, "trove-test-%08x", (unsigned)test_rand(&seed));
        snprintf(bucket_url, sizeof bucket_url, "s3://%s/some/prefix", bucket);
    }
    RUN(test_basic);
    RUN(test_list_and_stage);
    RUN(test_packs);
    RUN(test_many_packs);
    RUN(test_bad_packs);
    RUN(test_threads);
    RUN(test_async);
    RUN(test_errors);
    RUN(test_alloc_failures);
    RUN(test_proxy_stopped);
    RUN_WITH(test_profile, dir);
    RUN_WITH(test_independent_client, dir);
    test_rm_rf(dir);
    stop_server();
    return test_done();
}
