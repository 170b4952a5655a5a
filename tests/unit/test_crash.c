/*
 * test_crash.c: the store survives SIGKILL at any moment. This file is the parent; the
 * child, whose operations it kills, is crash_child.c.
 *
 * Each round forks a child that opens the store and runs random operations forever —
 * writes (random bytes, zeros, copies of other blocks so that objects are shared), reads
 * checked against its model, whole puts (resize + write + commit), resizes, commits,
 * snapshots (at most SNAP_KEEP, the oldest removed first), removal and re-creation of a
 * volume, dropping uncommitted changes by reopening, gc, and heals — on two small volumes
 * and a big sparse v3 one, whose small commits write patch segments (no puts or resizes
 * there). A heal damages the loose object of a block unchanged since its commit (one byte
 * flipped in place, as a bad disk would), reads the block, which must fail with
 * TROVE_ERR_CHECKSUM and put the object on record as damaged, and puts the block's bytes
 * again (a volume write of the bytes the slot already names, or a backend put), which must
 * replace the object and drop the record; it changes no committed state. One round in
 * HEAL_FIRST starts with a heal, so that kills reach heals on a slow disk too. The parent
 * kills the child with SIGKILL after a random delay (at least TROVE_CRASH_KILLS times,
 * default 100), then reopens the store in-process, finishes a heal the kill cut short after
 * its damage (below), and checks: `verify --deep` is clean, every volume and snapshot reads
 * back exactly its last committed state, and nothing is listed that was never made. Every
 * GC_EVERY rounds, and at the end, the parent runs gc and checks that the objects left are
 * exactly those the recipes name and that a second gc deletes nothing; at the end no temp
 * file, stray recipe or damage on record may be left either. At least a tenth of the kills
 * must land inside an operation that changes committed state (between its `pending` and
 * its `end` below), and a heal must begin at least every 50 kills; the delays (and
 * HEAL_FIRST) are tuned for that, and only spread the kill points: nothing is timed.
 *
 * The expected states live outside the store, in a journal the child appends to with one
 * write(2) per line (the page cache outlives a SIGKILL, so no fsync is needed):
 *
 *   state NAME SIZE HASH RO      the committed state when the round began (parent)
 *   ready                        the child has loaded the store and starts working
 *   begin KIND                   an operation starts
 *   pending NAME SIZE HASH RO    NAME's committed state if the operation lands
 *   pending NAME absent          ... or NAME will not exist
 *   damage DIGEST SIDEFILE       a heal is about to damage object DIGEST, whose good bytes
 *                                SIDEFILE (outside the store) already holds in full
 *   healed                       ... the object is whole again and off the record
 *   end                          the operation returned (its pending state landed)
 *   error KIND RC MESSAGE        the child met an unexpected error and exited
 *
 * HASH is trove_checksum64 of the volume's SIZE bytes, RO is 1 for a snapshot. After a
 * kill, each name must be in its state from the journal, except that the name of a
 * pending operation with no `end` may be in either the old or the pending state. The
 * check does not depend on generation numbers. A `damage` with no `healed` leaves the
 * object intact, damaged but not on record, or on record (damaged, deleted, or rewritten
 * but not yet released); the parent finishes the heal as a user would, with a read (which
 * puts damage nobody has found yet on record: a put alone skips an object whose file is
 * there) and then a put of the good bytes, and the object must then read back whole
 * before verify runs. The PRNG seed (TROVE_CRASH_SEED) is printed with every failure; the
 * kill moments come from real time, so a seed replays the same operations, not the same
 * kill points.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "crash_test.h"
#include "testutil.h"
#include "trove/recipe.h"
#include "trove/backend.h"
#include "trove/volume.h"

#define KILLS_DEFAULT 100
#define SEED_DEFAULT 0x7a0e5eedULL
#define GC_EVERY 10          /* rounds between the parent's gc passes */
#define READY_WAIT_MS 5000   /* a hang guard only: the kill comes anyway */

static uint64_t base_seed;

/* ---- the journal, read by the parent --------------------------------------------------- */

struct vstate {
    char name[TROVE_VOLUME_NAME_MAX + 1];
    int exists;
    int readonly;
    uint64_t size;
    uint64_t hash;
};

struct journal {
    struct vstate st[MAX_NAMES]; /* the committed states as of the last "end" */
    size_t n;
    struct vstate pend;          /* valid while has_pend */
    int has_pend;
    int open_kind;               /* the operation under way, or -1 */
    int ready;
    int damaged;                 /* a heal's "damage" with no "healed" yet: */
    struct trove_digest dmg_d;   /* ... the object */
    char dmg_side[JLINE_MAX];    /* ... and the file holding its good bytes */
    uint64_t done[K_COUNT];      /* operations completed, by kind */
    char error[512];             /* the child's error line, if any */
};

static struct vstate *state_find(struct vstate *st, size_t *n, const char *name, int add)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(st[i].name, name) == 0)
            return &st[i];
    if (!add || *n == MAX_NAMES)
        return NULL;
    memset(&st[*n], 0, sizeof st[*n]);
    snprintf(st[*n].name, sizeof st[*n].name, "%s", name);
    return &st[(*n)++];
}

/* "NAME absent" or "NAME SIZE HASH RO". */
static int parse_state(const char *text, struct vstate *out)
{
    char word[16];
    memset(out, 0, sizeof *out);
    if (sscanf(text, "%128s %15s", out->name, word) == 2 && strcmp(word, "absent") == 0)
        return 0;
    out->exists = 1;
    return sscanf(text, "%128s %" SCNu64 " %" SCNx64 " %d", out->name, &out->size, &out->hash,
                  &out->readonly) == 4
               ? 0
               : -1;
}

static int journal_read(const char *path, struct journal *j)
{
    size_t len = 0;
    uint8_t *buf = test_read_file(path, &len);
    char *p, *nl;
    struct vstate s;
    int rc = 0;

    memset(j, 0, sizeof *j);
    j->open_kind = -1;
    if (!buf)
        return -1;
    buf[len] = 0; /* test_read_file leaves room for it */
    for (p = (char *)buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
        *nl = 0; /* a last line without its newline was cut by the kill: ignored */
        if (strncmp(p, "state ", 6) == 0 || strncmp(p, "pending ", 8) == 0) {
            int pending = p[0] == 'p';
            struct vstate *to;
            if (parse_state(p + (pending ? 8 : 6), &s) != 0 || (pending && j->open_kind < 0)) {
                rc = -1;
                break;
            }
            if (pending) {
                j->pend = s;
                j->has_pend = 1;
            } else if ((to = state_find(j->st, &j->n, s.name, 1)) != NULL) {
                *to = s;
            } else {
                rc = -1;
                break;
            }
        } else if (strcmp(p, "ready") == 0) {
            j->ready = 1;
        } else if (strncmp(p, "begin ", 6) == 0) {
            if (j->damaged) {
                rc = -1;
                break;
            }
            j->open_kind = -1;
            for (int k = 0; k < K_COUNT; k++)
                if (strcmp(p + 6, kind_names[k]) == 0)
                    j->open_kind = k;
            j->has_pend = 0;
            if (j->open_kind < 0) {
                rc = -1;
                break;
            }
        } else if (strncmp(p, "damage ", 7) == 0) {
            /* "damage HEX SIDEFILE": HEX is 32 digits, SIDEFILE the rest of the line. */
            char hex[33];
            if (j->open_kind != K_HEAL || j->damaged || strlen(p) < 41 || p[39] != ' ') {
                rc = -1;
                break;
            }
            memcpy(hex, p + 7, 32);
            hex[32] = 0;
            if (trove_digest_parse(hex, &j->dmg_d) != TROVE_OK) {
                rc = -1;
                break;
            }
            snprintf(j->dmg_side, sizeof j->dmg_side, "%s", p + 40);
            j->damaged = 1;
        } else if (strcmp(p, "healed") == 0) {
            if (!j->damaged) {
                rc = -1;
                break;
            }
            j->damaged = 0;
        } else if (strcmp(p, "end") == 0) {
            struct vstate *to;
            if (j->open_kind < 0 || j->damaged) {
                rc = -1;
                break;
            }
            if (j->has_pend) {
                if ((to = state_find(j->st, &j->n, j->pend.name, 1)) == NULL) {
                    rc = -1;
                    break;
                }
                *to = j->pend;
            }
            j->done[j->open_kind]++;
            j->open_kind = -1;
            j->has_pend = 0;
        } else if (strncmp(p, "error ", 6) == 0) {
            snprintf(j->error, sizeof j->error, "%s", p);
        } else {
            rc = -1;
            break;
        }
    }
    if (rc != 0)
        fprintf(stderr, "journal %s: bad line \"%s\"\n", path, p);
    free(buf);
    return rc;
}

/* Start the journal of a round: the committed states, one "state" line each. */
static int journal_reset(const char *path, const struct vstate *st, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (st[i].exists)
            fprintf(f, "state %s %" PRIu64 " %016" PRIx64 " %d\n", st[i].name, st[i].size,
                    st[i].hash, st[i].readonly);
    return fclose(f);
}

/* ---- the parent's checks ---------------------------------------------------------------- */

struct stats {
    unsigned kills;
    unsigned early_kills;   /* before the child was ready (during open or load) */
    unsigned mid_op;        /* an operation under way */
    unsigned mid_pending;   /* between a "pending" and its "end" */
    unsigned landed;        /* ... and the pending state had landed */
    unsigned mid_kind[K_COUNT];
    /* Heals cut short after their "damage" and finished by the parent, by what it found:
     * the object on record as damaged, damaged but not on record yet, or intact. */
    unsigned finished_on_record, finished_damaged, finished_intact;
    uint64_t done[K_COUNT];
    unsigned gcs;
    uint64_t gc_deleted;
};

static int same_state(const struct vstate *a, const struct vstate *b)
{
    if (a->exists != b->exists)
        return 0;
    return !a->exists ||
           (a->size == b->size && a->hash == b->hash && a->readonly == b->readonly);
}

static void describe(const struct vstate *s, char *out, size_t n)
{
    if (!s->exists)
        snprintf(out, n, "absent");
    else
        snprintf(out, n, "%s%" PRIu64 " bytes, hash %016" PRIx64, s->readonly ? "snapshot, " : "",
                 s->size, s->hash);
}

/* Read entry e's volume back whole (into buf) and describe it in *out. */
static int read_state(struct trove_store *s, const struct trove_volume_entry *e, uint8_t *buf,
                      struct vstate *out)
{
    struct trove_volume *v = NULL;
    struct trove_volume_info info;
    struct trove_diag diag = {0};
    int rc;

    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", e->name);
    rc = trove_volume_open(s, e->name, &v, &diag);
    if (rc != TROVE_OK) {
        fprintf(stderr, "open volume %s: %s (%s)\n", e->name, trove_strerror(rc), diag.msg);
        return rc;
    }
    rc = trove_volume_info(v, &info);
    if (rc == TROVE_OK && (info.size > VOL_MAX || info.size != e->size ||
                           info.readonly != e->readonly || info.dirty))
        rc = TROVE_ERR_MISMATCH;
    if (rc == TROVE_OK)
        rc = trove_volume_read(v, 0, buf, (size_t)info.size);
    if (rc == TROVE_OK) {
        out->exists = 1;
        out->readonly = info.readonly != 0;
        out->size = info.size;
        out->hash = trove_checksum64(buf, (size_t)info.size);
    } else {
        fprintf(stderr, "read volume %s: %s\n", e->name, trove_strerror(rc));
    }
    trove_volume_close(v);
    return rc;
}

static int verify_clean(struct trove_store *s, const char *when, unsigned round)
{
    struct trove_verify_report rep;
    int rc;
    memset(&rep, 0, sizeof rep);
    rc = trove_store_verify(s, TROVE_VERIFY_DEEP, &rep, NULL, NULL);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(rep.bad_recipes, 0);
    CHECK_EQ_INT(rep.missing_objects, 0);
    CHECK_EQ_INT(rep.bad_length, 0);
    CHECK_EQ_INT(rep.bad_hash, 0);
    if (rc != TROVE_OK || rep.bad_recipes || rep.missing_objects || rep.bad_length ||
        rep.bad_hash) {
        fprintf(stderr,
                "round %u (TROVE_CRASH_SEED=%" PRIu64 "), verify %s: %s; %" PRIu64
                " bad recipes, %" PRIu64 " missing, %" PRIu64 " bad length, %" PRIu64
                " bad hash; first problem: %s\n",
                round, base_seed, when, trove_strerror(rc), rep.bad_recipes,
                rep.missing_objects, rep.bad_length, rep.bad_hash, rep.first_problem);
        return -1;
    }
    return 0;
}

/* Is name, found in the state *now (absent: NULL), in a state the journal allows? */
static int check_name(const struct journal *j, const char *name, const struct vstate *now,
                      unsigned round)
{
    struct vstate none;
    const struct vstate *old = NULL;
    int pend = j->has_pend && strcmp(name, j->pend.name) == 0;
    char a[128], b[128], c[128];

    memset(&none, 0, sizeof none);
    for (size_t i = 0; i < j->n; i++)
        if (strcmp(j->st[i].name, name) == 0)
            old = &j->st[i];
    if (!old)
        old = &none;
    if (!now)
        now = &none;
    if (same_state(now, old) || (pend && same_state(now, &j->pend)))
        return 0;
    describe(now, a, sizeof a);
    describe(old, b, sizeof b);
    describe(&j->pend, c, sizeof c);
    fprintf(stderr, "round %u (TROVE_CRASH_SEED=%" PRIu64 "): volume %s is %s, but the journal "
            "says %s%s%s%s%s\n",
            round, base_seed, name, a, b, pend ? ", or if the cut-short " : "",
            pend ? kind_names[j->open_kind] : "", pend ? " landed, " : "", pend ? c : "");
    return -1;
}

/*
 * Finish a heal the kill cut short, as a user would: put the object's good bytes (from the
 * side file) again. Wherever the kill landed the object is intact (before the damage, or
 * after the heal's put), damaged but not yet on record (before the read that finds it), or
 * on record (damaged, missing after the heal's delete, or good again but not yet released).
 * A put alone does not do for the second: a name that is not on record and whose file is
 * there is taken as stored (put-if-absent does not read what it skips), so the damage
 * would stay. A get first finds it and puts it on record, as any read would; then the put
 * replaces it.
 */
static int finish_heal(struct trove_store *s, const struct journal *j, struct stats *st,
                       unsigned round)
{
    struct trove_backend *be = trove_store_backend(s);
    struct trove_bytes b = {0};
    struct trove_digest d;
    size_t len = 0;
    uint8_t *good = test_read_file(j->dmg_side, &len);
    int on_record, got, rc, created = 0, bad = 0;
    char hex[33];

    trove_digest_hex(&j->dmg_d, hex);
    CHECK(good != NULL);
    if (!good) {
        fprintf(stderr, "round %u (TROVE_CRASH_SEED=%" PRIu64 "): %s: cannot read\n", round,
                base_seed, j->dmg_side);
        return -1;
    }
    trove_digest_of(good, len, &d);
    CHECK(trove_digest_equal(&d, &j->dmg_d)); /* it was written whole before the damage */
    on_record = trove_backend_quarantined(be, &j->dmg_d);
    got = trove_backend_get(be, &j->dmg_d, &b, len);
    if (on_record) {
        CHECK_EQ_INT(got, TROVE_ERR_CHECKSUM); /* never served */
        st->finished_on_record++;
    } else if (got == TROVE_ERR_CHECKSUM) {
        CHECK_EQ_INT(trove_backend_quarantined(be, &j->dmg_d), 1);
        st->finished_damaged++;
    } else {
        CHECK_EQ_INT(got, TROVE_OK);
        CHECK(got != TROVE_OK || (b.len == len && memcmp(b.ptr, good, len) == 0));
        st->finished_intact++;
    }
    rc = trove_backend_put(be, &j->dmg_d, good, len, &created);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(created, got != TROVE_OK); /* a damaged object is replaced, an intact kept */
    bad |= rc != TROVE_OK;
    rc = trove_backend_get(be, &j->dmg_d, &b, len);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(trove_backend_quarantined(be, &j->dmg_d), 0);
    if (rc != TROVE_OK || b.len != len || memcmp(b.ptr, good, len) != 0) {
        fprintf(stderr,
                "round %u (TROVE_CRASH_SEED=%" PRIu64 "): object %s is not healed by its "
                "good bytes: %s\n",
                round, base_seed, hex, trove_strerror(rc));
        CHECK(0);
        bad = 1;
    }
    trove_bytes_free(&b);
    free(good);
    return bad ? -1 : 0;
}

/*
 * Reopen the store after a kill, finish a heal cut short (finish_heal), and compare the
 * store with the journal j: verify --deep is clean,
 * every volume reads back whole, and every name the journal or the store knows is in its
 * journaled state (or, for an operation cut short, in its pending state). On success the
 * states found replace j's.
 */
static int check_after_kill(const char *store_dir, struct journal *j, struct stats *st,
                            unsigned round, uint8_t *buf)
{
    struct trove_store *s = NULL;
    struct trove_volume_entry *list = NULL;
    struct trove_diag diag = {0};
    struct vstate found[MAX_NAMES];
    size_t n = 0, nfound = 0;
    int rc, bad = 0;

    rc = trove_store_open(store_dir, 0, &s, &diag);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK) {
        fprintf(stderr, "round %u (TROVE_CRASH_SEED=%" PRIu64 "): open: %s (%s)\n", round,
                base_seed, trove_strerror(rc), diag.msg);
        return -1;
    }
    if (j->damaged)
        bad |= finish_heal(s, j, st, round) != 0;
    bad |= verify_clean(s, "after the kill", round);
    rc = trove_volume_list(s, &list, &n);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK(n <= MAX_NAMES);
    if (rc != TROVE_OK || n > MAX_NAMES) {
        bad = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ_INT(list[i].error, TROVE_OK);
        if (list[i].error != TROVE_OK || read_state(s, &list[i], buf, &found[nfound]) != 0) {
            fprintf(stderr, "round %u (TROVE_CRASH_SEED=%" PRIu64 "): volume %s unreadable\n",
                    round, base_seed, list[i].name);
            CHECK(0);
            bad = 1;
            continue;
        }
        nfound++;
    }
    if (nfound != n)
        goto out;

    /* The journal's names (with the pending one), then any other name the store lists. */
    for (size_t i = 0; i < j->n; i++)
        bad |= check_name(j, j->st[i].name, state_find(found, &nfound, j->st[i].name, 0),
                          round) != 0;
    if (j->has_pend && !state_find(j->st, &j->n, j->pend.name, 0))
        bad |= check_name(j, j->pend.name, state_find(found, &nfound, j->pend.name, 0),
                          round) != 0;
    for (size_t i = 0; i < nfound; i++)
        if (!state_find(j->st, &j->n, found[i].name, 0) &&
            !(j->has_pend && strcmp(found[i].name, j->pend.name) == 0))
            bad |= check_name(j, found[i].name, &found[i], round) != 0;
    CHECK(!bad);
    if (j->has_pend) {
        const struct vstate *now = state_find(found, &nfound, j->pend.name, 0);
        const struct vstate *old = state_find(j->st, &j->n, j->pend.name, 0);
        struct vstate none;
        memset(&none, 0, sizeof none);
        st->landed += same_state(now ? now : &none, &j->pend) &&
                      !same_state(old ? old : &none, &j->pend);
    }
    if (!bad) {
        memcpy(j->st, found, nfound * sizeof *found);
        j->n = nfound;
    }
out:
    free(list);
    trove_store_close(s);
    return bad ? -1 : 0;
}

static int cmp_digest(const void *a, const void *b) { return memcmp(a, b, 16); }

struct digests {
    struct trove_digest *d;
    size_t n, cap;
};

static int digests_add(struct digests *ds, const struct trove_digest *d)
{
    if (ds->n == ds->cap) {
        size_t cap = ds->cap ? 2 * ds->cap : 256;
        struct trove_digest *p = realloc(ds->d, cap * sizeof *p);
        if (!p)
            return 1;
        ds->d = p;
        ds->cap = cap;
    }
    ds->d[ds->n++] = *d;
    return 0;
}

static int collect_fn(void *ctx, const struct trove_digest *d) { return digests_add(ctx, d); }

static int count_fn(void *ctx, const struct trove_digest *d)
{
    (void)d;
    ++*(size_t *)ctx;
    return 0;
}

static void digests_sort_unique(struct digests *ds)
{
    size_t k = 0;
    if (ds->n)
        qsort(ds->d, ds->n, sizeof *ds->d, cmp_digest);
    for (size_t i = 0; i < ds->n; i++)
        if (k == 0 || !trove_digest_equal(&ds->d[k - 1], &ds->d[i]))
            ds->d[k++] = ds->d[i];
    ds->n = k;
}

/* Read object d through the store's backend (loose or packed; NULL if absent). */
static uint8_t *read_object(struct trove_backend *be, const struct trove_digest *d, size_t *len)
{
    struct trove_bytes b = {0};

    if (trove_backend_get(be, d, &b, (size_t)1 << 20) != TROVE_OK) {
        trove_bytes_free(&b);
        return NULL;
    }
    *len = b.len;
    return b.ptr;
}

/* The digests a v3 manifest names: its pages, their sections (and each patch's base), and
 * the data digests of its dictionary chunks and raw segments. */
static int v3_digests(struct trove_backend *be, const uint8_t *buf, size_t len, struct digests *ds)
{
    struct trove_recipe_v3 m;
    struct trove_digest *tmp = malloc(TROVE_RECIPE_V3_SEGMENT_SLOTS * sizeof *tmp);
    uint32_t *idx = malloc(TROVE_RECIPE_V3_SEGMENT_SLOTS * sizeof *idx);
    struct trove_digest *dict = NULL; /* the dictionary, by index */
    uint8_t *used = NULL;             /* the indices some slot names */
    uint64_t sec_no = 0;
    int rc = TROVE_ERR_NOMEM;

    if (!tmp || !idx)
        goto out;
    if ((rc = trove_recipe_v3_decode(buf, len, &m, NULL)) != TROVE_OK)
        goto out;
    rc = TROVE_ERR_NOMEM;
    if (!(dict = calloc(m.dict_count, sizeof *dict)) || !(used = calloc(m.dict_count, 1)))
        goto out;
    for (uint32_t p = 0; p < m.page_count; p++) {
        struct trove_v3_section sec[TROVE_RECIPE_V3_PAGE_SECTIONS];
        struct trove_digest pd;
        uint32_t n = 0;
        size_t plen = 0;
        uint8_t *page;
        trove_recipe_v3_page(&m, p, &pd);
        if (digests_add(ds, &pd) != 0 || !(page = read_object(be, &pd, &plen))) {
            rc = TROVE_ERR_NOTFOUND;
            goto out;
        }
        rc = trove_recipe_v3_page_decode(page, plen, sec, &n, NULL);
        free(page);
        for (uint32_t k = 0; rc == TROVE_OK && k < n; k++, sec_no++) {
            size_t olen = 0;
            uint8_t *obj, enc = 0;
            uint32_t cnt;
            if (digests_add(ds, &sec[k].d) != 0 || !(obj = read_object(be, &sec[k].d, &olen))) {
                rc = TROVE_ERR_NOTFOUND;
                break;
            }
            if (sec_no < m.nsegments && sec[k].encoding == TROVE_V3_ENC_PATCH) {
                /* A patch names its base segment, which names no data: the slots are the
                 * base's indices with the patch's applied. */
                struct trove_v3_patch pt;
                uint32_t bval[TROVE_RECIPE_V3_PATCH_MAX];
                uint64_t left = m.slot_count - sec_no * TROVE_RECIPE_V3_SEGMENT_SLOTS;
                uint8_t *base = NULL;
                size_t blen = 0;
                cnt = (uint32_t)(left < TROVE_RECIPE_V3_SEGMENT_SLOTS ? left : TROVE_RECIPE_V3_SEGMENT_SLOTS);
                rc = trove_recipe_v3_patch_decode(obj, olen, cnt, m.dict_count, &pt, NULL);
                if (rc == TROVE_OK && digests_add(ds, &pt.base) != 0)
                    rc = TROVE_ERR_NOMEM;
                if (rc == TROVE_OK && !(base = read_object(be, &pt.base, &blen)))
                    rc = TROVE_ERR_NOTFOUND;
                if (rc == TROVE_OK)
                    rc = trove_recipe_v3_segment_decode(base, blen, cnt, m.dict_count, idx, NULL,
                                                        &enc, NULL);
                if (rc == TROVE_OK)
                    rc = trove_recipe_v3_patch_apply(&pt, idx, bval, NULL);
                free(base);
                enc = TROVE_V3_ENC_PACKED;
            } else if (sec_no < m.nsegments) {
                uint64_t left = m.slot_count - sec_no * TROVE_RECIPE_V3_SEGMENT_SLOTS;
                cnt = (uint32_t)(left < TROVE_RECIPE_V3_SEGMENT_SLOTS ? left : TROVE_RECIPE_V3_SEGMENT_SLOTS);
                rc = trove_recipe_v3_segment_decode(obj, olen, cnt, m.dict_count, idx, tmp, &enc,
                                                    NULL);
            } else {
                uint64_t at = (sec_no - m.nsegments) * TROVE_RECIPE_V3_CHUNK_ENTRIES;
                cnt = (uint32_t)(m.dict_count - at < TROVE_RECIPE_V3_CHUNK_ENTRIES ? m.dict_count - at : TROVE_RECIPE_V3_CHUNK_ENTRIES);
                rc = trove_recipe_v3_chunk_decode(obj, olen, cnt, dict + at, NULL);
                enc = TROVE_V3_ENC_NONE;
            }
            free(obj);
            for (uint32_t i = 0; rc == TROVE_OK && enc == TROVE_V3_ENC_PACKED && i < cnt; i++)
                used[idx[i]] = 1;
            for (uint32_t i = 0; rc == TROVE_OK && enc == TROVE_V3_ENC_RAW && i < cnt; i++)
                if (!trove_digest_is_zero(&tmp[i]) && digests_add(ds, &tmp[i]) != 0)
                    rc = TROVE_ERR_NOMEM;
        }
        if (rc != TROVE_OK)
            goto out;
    }
    /* The data objects: the entries a slot names. A v4 dictionary may also hold entries no
     * slot names any more (its stale count); gc does not keep those. */
    for (uint32_t x = 1; x < m.dict_count; x++)
        if (used[x] && digests_add(ds, &dict[x]) != 0) {
            rc = TROVE_ERR_NOMEM;
            goto out;
        }
    rc = TROVE_OK;
out:
    free(dict);
    free(used);
    free(tmp);
    free(idx);
    return rc;
}

/* The digests the committed recipes name, read from DIR/volumes/NAME.recipe (v1 entries,
 * or a v3 manifest's objects and the data digests they hold). */
static int recipe_digests(const char *store_dir, struct trove_backend *be,
                          const struct vstate *st, size_t n, struct digests *ds)
{
    for (size_t i = 0; i < n; i++) {
        char path[1024];
        size_t len = 0;
        uint8_t *buf;
        struct trove_recipe_v1 r;
        struct trove_digest d;
        uint32_t version = 0;
        int rc;

        snprintf(path, sizeof path, "%s/volumes/%s.recipe", store_dir, st[i].name);
        buf = test_read_file(path, &len);
        if (!buf) {
            fprintf(stderr, "%s: cannot read\n", path);
            return -1;
        }
        rc = trove_recipe_version(buf, len, &version, NULL);
        if (rc == TROVE_OK && version != 1) {
            rc = v3_digests(be, buf, len, ds);
        } else if (rc == TROVE_OK) {
            rc = trove_recipe_v1_decode(buf, len, &r, NULL);
            for (uint64_t k = 0; rc == TROVE_OK && k < r.slot_count; k++) {
                trove_recipe_v1_slot(&r, k, &d);
                if (!trove_digest_is_zero(&d) && digests_add(ds, &d) != 0)
                    rc = TROVE_ERR_NOMEM;
            }
        }
        free(buf);
        if (rc != TROVE_OK) {
            fprintf(stderr, "%s: %s\n", path, trove_strerror(rc));
            return -1;
        }
    }
    digests_sort_unique(ds);
    return 0;
}

/*
 * gc in the parent, with no volume open: afterwards verify is clean, every volume still
 * reads back its state, the objects are exactly those the recipes name, and a second gc
 * deletes nothing.
 */
static int gc_and_check(const char *store_dir, struct journal *j, struct stats *st,
                        unsigned round, uint8_t *buf)
{
    struct trove_store *s = NULL;
    struct trove_gc_report rep;
    struct digests named = {0}, stored = {0};
    struct trove_volume_entry *list = NULL;
    size_t n = 0;
    int rc, bad = 0;

    rc = trove_store_open(store_dir, 0, &s, NULL);
    CHECK_EQ_INT(rc, TROVE_OK);
    if (rc != TROVE_OK)
        return -1;
    memset(&rep, 0, sizeof rep);
    rc = trove_store_gc(s, &rep, NULL, NULL);
    CHECK_EQ_INT(rc, TROVE_OK);
    st->gcs++;
    st->gc_deleted += rep.objects_deleted;
    bad |= rc != TROVE_OK;
    bad |= verify_clean(s, "after gc", round);

    /* The volumes read back as before. */
    rc = trove_volume_list(s, &list, &n);
    CHECK_EQ_INT(rc, TROVE_OK);
    CHECK_EQ_INT(n, j->n);
    for (size_t i = 0; rc == TROVE_OK && i < n && i < j->n; i++) {
        struct vstate now;
        const struct vstate *want = state_find(j->st, &j->n, list[i].name, 0);
        CHECK(want != NULL);
        CHECK_EQ_INT(read_state(s, &list[i], buf, &now), TROVE_OK);
        CHECK(want && same_state(&now, want));
        if (!want || !same_state(&now, want))
            bad = 1;
    }
    bad |= rc != TROVE_OK || n != j->n;

    /* Objects == the digests the recipes name. */
    CHECK_EQ_INT(recipe_digests(store_dir, trove_store_backend(s), j->st, j->n, &named), 0);
    rc = trove_backend_list(trove_store_backend(s), collect_fn, &stored);
    CHECK_EQ_INT(rc, 0);
    digests_sort_unique(&stored);
    CHECK_EQ_INT(stored.n, named.n);
    CHECK(stored.n == named.n &&
          (named.n == 0 || memcmp(stored.d, named.d, named.n * sizeof *named.d) == 0));
    if (stored.n != named.n ||
        (named.n && memcmp(stored.d, named.d, named.n * sizeof *named.d) != 0)) {
        fprintf(stderr,
                "round %u (TROVE_CRASH_SEED=%" PRIu64 "): after gc %zu objects are stored "
                "but the recipes name %zu\n",
                round, base_seed, stored.n, named.n);
        bad = 1;
    }

    memset(&rep, 0, sizeof rep);
    CHECK_EQ_INT(trove_store_gc(s, &rep, NULL, NULL), TROVE_OK);
    CHECK_EQ_INT(rep.objects_deleted, 0);
    bad |= rep.objects_deleted != 0;
    free(list);
    free(named.d);
    free(stored.d);
    trove_store_close(s);
    return bad ? -1 : 0;
}

/* After the last round: no temp file, no stray recipe and no damage on record (every heal
 * was finished) is left behind by the kills. */
static void check_leftovers(const char *store_dir, struct journal *j)
{
    char path[1024];
    struct trove_store *s = NULL;
    DIR *dp;
    struct dirent *de;
    size_t records = 0;

    CHECK_EQ_INT(trove_store_open(store_dir, 0, &s, NULL), TROVE_OK);
    snprintf(path, sizeof path, "%s/tmp", store_dir);
    CHECK_EQ_INT(test_count_dir(path), 0);
    CHECK_EQ_INT(trove_backend_quarantine_list(trove_store_backend(s), count_fn, &records), 0);
    CHECK_EQ_INT(records, 0);
    /* No record's temp file either: the writable open removes a dead writer's. */
    snprintf(path, sizeof path, "%s/quarantine", store_dir);
    if (access(path, F_OK) == 0)
        CHECK_EQ_INT(test_count_dir(path), 0);
    snprintf(path, sizeof path, "%s/volumes", store_dir);
    CHECK_EQ_INT(test_count_dir(path), j->n);
    if ((dp = opendir(path)) != NULL) {
        while ((de = readdir(dp)) != NULL) {
            char name[TROVE_VOLUME_NAME_MAX + 1];
            size_t len = strlen(de->d_name);
            int known = 0;
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            if (len > 7 && len - 7 <= TROVE_VOLUME_NAME_MAX &&
                strcmp(de->d_name + len - 7, ".recipe") == 0) {
                memcpy(name, de->d_name, len - 7);
                name[len - 7] = 0;
                known = state_find(j->st, &j->n, name, 0) != NULL;
            }
            if (!known)
                fprintf(stderr, "stray file left in %s: %s\n", path, de->d_name);
            CHECK(known);
        }
        closedir(dp);
    }
    trove_store_close(s);
}

/* ---- the rounds -------------------------------------------------------------------------- */

static void sleep_us(uint64_t us)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(us / 1000000);
    ts.tv_nsec = (long)(us % 1000000) * 1000;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One round: fork a child, kill it, check the store. Returns 0 to go on. */
static int run_round(const char *store_dir, const char *journal, struct journal *j,
                     struct stats *st, unsigned round, uint64_t *rng, uint8_t *buf)
{
    int fds[2], status = 0;
    pid_t pid;
    uint64_t delay, r = rnd(rng, 16);
    char c;

    if (journal_reset(journal, j->st, j->n) != 0 || pipe(fds) != 0) {
        perror(journal);
        CHECK(0);
        return -1;
    }
    fflush(NULL);
    pid = fork();
    CHECK(pid >= 0);
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fds[0]);
        crash_child_main(store_dir, journal, base_seed ^ (0x9e3779b97f4a7c15ULL * (round + 1)),
                   fds[1]);
        _exit(CHILD_FAILED + 2);
    }
    close(fds[1]);
    /* Now and then kill during the child's open and load (a crash in recovery); else let
     * it get to work first. The delays only spread the kill points: nothing is timed. */
    if (r == 0) {
        delay = rnd(rng, 3000);
    } else {
        struct pollfd pfd = {fds[0], POLLIN, 0};
        if (poll(&pfd, 1, READY_WAIT_MS) == 1 && read(fds[0], &c, 1) < 0)
            perror("read");
        if (r < 3)
            delay = 200 + rnd(rng, 1800);
        else if (r < 6)
            delay = 200 + rnd(rng, 7800);
        else /* mostly long enough for the child to get somewhere */
            delay = 5000 + rnd(rng, 20000);
    }
    sleep_us(delay);
    kill(pid, SIGKILL);
    close(fds[0]);
    CHECK(waitpid(pid, &status, 0) == pid);
    if (journal_read(journal, j) != 0) {
        fprintf(stderr, "round %u (TROVE_CRASH_SEED=%" PRIu64 "): bad journal\n", round,
                base_seed);
        CHECK(0);
        return -1;
    }
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
        fprintf(stderr,
                "round %u (TROVE_CRASH_SEED=%" PRIu64 "): the child was not killed but "
                "exited (status %d): %s\n",
                round, base_seed, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                j->error[0] ? j->error : "no error journaled");
        CHECK(0);
        return -1;
    }
    st->kills++;
    for (int k = 0; k < K_COUNT; k++)
        st->done[k] += j->done[k];
    if (!j->ready)
        st->early_kills++;
    if (j->open_kind >= 0) {
        st->mid_op++;
        st->mid_kind[j->open_kind]++;
        st->mid_pending += j->has_pend;
    }
    if (check_after_kill(store_dir, j, st, round, buf) != 0)
        return -1;
    if ((round + 1) % GC_EVERY == 0 && gc_and_check(store_dir, j, st, round, buf) != 0)
        return -1;
    return 0;
}

/* Kill the child in a loop (see the top of this file), then check the store and report. */
static void test_kills(const char *store_dir, const char *journal, struct journal *j, uint8_t *buf)
{
    const char *env;
    struct stats st;
    unsigned want = KILLS_DEFAULT, round;
    uint64_t rng = base_seed, ops = 0;

    memset(&st, 0, sizeof st);
    if ((env = getenv("TROVE_CRASH_KILLS")) != NULL && atoi(env) > 0)
        want = (unsigned)atoi(env);
    /* Where the kills land follows the machine's speed (a slow one, or TSan, spends longer
     * in some operations): past the kills asked for, rounds go on (up to four times as
     * many) until heals have begun at least once every 50 kills, which the checks below
     * require, so that the kinds the schedule reached are not left to the clock. */
    for (round = 0; !test_failed && st.kills < 4 * want &&
                    (st.kills < want || st.done[K_HEAL] + st.mid_kind[K_HEAL] < st.kills / 50);
         round++)
        if (run_round(store_dir, journal, j, &st, round, &rng, buf) != 0)
            break;
    if (!test_failed)
        gc_and_check(store_dir, j, &st, round, buf);
    if (!test_failed)
        check_leftovers(store_dir, j);

    for (int k = 0; k < K_COUNT; k++)
        ops += st.done[k];
    printf("crash: %u kills (%u during open, %u mid-operation, %u between pending and end, "
           "%u of them landed), %" PRIu64 " operations done, %" PRIu64 " commits, %u parent gc "
           "(%" PRIu64 " objects deleted), seed %" PRIu64 "\n",
           st.kills, st.early_kills, st.mid_op, st.mid_pending, st.landed, ops,
           st.done[K_COMMIT] + st.done[K_PUT], st.gcs, st.gc_deleted, base_seed);
    printf("crash: operations done / kills mid-operation, by kind:");
    for (int k = 0; k < K_COUNT; k++)
        printf(" %s %" PRIu64 "/%u", kind_names[k], st.done[k], st.mid_kind[k]);
    printf("\n");
    printf("crash: heals: %" PRIu64 " done, %u cut short by a kill, %u of them after the "
           "damage and finished by the parent (the object on record %u, damaged but not on "
           "record %u, intact %u)\n",
           st.done[K_HEAL], st.mid_kind[K_HEAL],
           st.finished_on_record + st.finished_damaged + st.finished_intact,
           st.finished_on_record, st.finished_damaged, st.finished_intact);
    /* The kills must reach inside the operations that change committed state. */
    CHECK(st.mid_pending >= st.kills / 10);
    /* ... and heals must run, at least one every 50 kills. Only the heals begun are counted:
     * how many of them complete and how many a kill cuts short depends on how fast the disk
     * syncs (a slow one lets few complete), and nothing is timed. */
    CHECK(st.done[K_HEAL] + st.mid_kind[K_HEAL] >= st.kills / 50);
}

int main(int argc, char **argv)
{
    const char *tmpdir = getenv("TMPDIR"), *env;
    char root[512], store_dir[600], journal[600];
    struct trove_store *s = NULL;
    struct journal *j = calloc(1, sizeof *j);
    uint8_t *buf = malloc(VOL_MAX);

    test_init(argc, argv);
    base_seed = SEED_DEFAULT;
    if ((env = getenv("TROVE_CRASH_SEED")) != NULL)
        base_seed = strtoull(env, NULL, 0);
    if (!j || !buf)
        return 1;
    snprintf(root, sizeof root, "%s/trove_crash_XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(root)) {
        perror(root);
        return 1;
    }
    snprintf(store_dir, sizeof store_dir, "%s/store", root);
    snprintf(journal, sizeof journal, "%s/journal", root);
    CHECK_EQ_INT(trove_store_open(store_dir, TROVE_STORE_CREATE, &s, NULL), TROVE_OK);
    trove_store_close(s);
    RUN_WITH(test_kills, store_dir, journal, j, buf);

    if (test_failed)
        fprintf(stderr, "store left in %s for inspection (TROVE_CRASH_SEED=%" PRIu64 ")\n",
                root, base_seed);
    else
        test_rm_rf(root);
    free(j);
    free(buf);
    return test_done();
}
