/*
 * trace_spill.c: the external sort of trace records (trace_spill.h), so that the trace
 * writers can put a capture of any length in time order in memory that does not grow with it.
 *
 *   add ──> buffer of `run` records ──(full: sorted)──> run k of temporary file A
 *                                                         ...
 *   finish: more than fan_in runs?  merge fan_in at a time, A -> B (A emptied), B -> A ...
 *           then the last <= fan_in runs are merged as they are read (a min-heap of cursors)
 *
 * A run is sorted through an array of (primary key, index) pairs — the start, or the end —
 * by a bottom-up merge sort with a scratch array of the same size (no qsort: its scratch
 * would be outside the allocation wrappers, and its order of equal keys is not ours to rely
 * on; the order here is total anyway, seq breaking every tie). Records go to disk as they are
 * in memory (the file is this process's own, unlinked from the start: O_TMPFILE, else
 * mkstemp and unlink, so nothing is ever left behind) through common/io.h, so that the I/O
 * fault hook reaches them. A sorter whose records all fit in one run never makes a file.
 *
 * Memory: the run buffer (40 bytes a record) and its two key arrays (16 bytes each a
 * record), up to `run` records; after the last run is spilled only the cursors (fan_in of
 * CURSOR_RECS records), the write buffer of a merge pass (WRITE_RECS), and 16 bytes for each
 * run spilled. Disk: 40 bytes a record, twice that during a merge pass.
 */
#define _GNU_SOURCE /* O_TMPFILE */

#include "trace_spill.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "common/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CURSOR_RECS 512u  /* records read from a run at a time (20 KiB) */
#define WRITE_RECS 2048u  /* records written at a time (80 KiB) */
#define RECSZ sizeof(struct trove__tsrec)

struct key {
    uint64_t k;      /* the start (START order) or the end (END order) */
    uint64_t i;      /* the record's index in the buffer */
};

struct run {
    uint64_t off, n; /* in records */
};

struct cursor {
    struct trove__tsrec *buf;
    size_t pos, len;
    uint64_t off, left; /* the next record of the run in the file, records left after buf */
};

/* A k-way merge of runs of one file: a min-heap of the cursors that still have records. */
struct merger {
    int fd;
    struct cursor *c;
    size_t nc;
    uint32_t *heap;
    size_t hn;
};

struct trove__tsort {
    int order;
    struct trove__tsort_options opt;
    char *dir;
    uint64_t count;            /* records added */
    /* the buffer being filled, and its sort */
    struct trove__tsrec *rec;
    size_t n, cap;
    struct key *keys, *scratch;
    size_t kcap;
    /* on disk: the runs, in file fd[cur] */
    int fd[2];
    uint64_t fend[2];          /* records in each file */
    int cur;
    struct run *runs;
    size_t nruns, runs_cap;
    struct trove__tsrec *wbuf; /* a merge pass's or a spill's output, WRITE_RECS */
    size_t wn;
    struct trove__tsrec *cbuf; /* the cursors' buffers, fan_in * CURSOR_RECS */
    /* reading */
    int finished, in_memory;
    size_t pos;                /* in memory: the next key */
    struct merger m;
    const struct trove__tsrec *head;
    struct trove__tsort_stats st;
};

/* ---- order ---------------------------------------------------------------------------- */

int trove__tsrec_cmp_start(const struct trove__tsrec *a, const struct trove__tsrec *b)
{
    uint64_t sa, sb;
    if (a->start_ns != b->start_ns)
        return a->start_ns < b->start_ns ? -1 : 1;
    sa = trove__tspan(a->kind, a->dur_ns);
    sb = trove__tspan(b->kind, b->dur_ns);
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_rec(int order, const struct trove__tsrec *a, const struct trove__tsrec *b)
{
    if (order == TROVE__TORDER_END) {
        uint64_t ea = trove__tend(a), eb = trove__tend(b);
        if (ea != eb)
            return ea < eb ? -1 : 1;
    }
    return trove__tsrec_cmp_start(a, b);
}

static uint64_t key_of(int order, const struct trove__tsrec *r)
{
    return order == TROVE__TORDER_END ? trove__tend(r) : r->start_ns;
}

static int key_less(const struct trove__tsort *s, const struct key *a, const struct key *b)
{
    if (a->k != b->k)
        return a->k < b->k;
    return cmp_rec(s->order, &s->rec[a->i], &s->rec[b->i]) < 0;
}

/* Sort keys[0..n) (scratch as large): insertion sort of blocks of 16, then merges. */
static void sort_keys(const struct trove__tsort *s, size_t n)
{
    struct key *src = s->keys, *dst = s->scratch;
    for (size_t b = 0; b < n; b += 16) {
        size_t e = b + 16 < n ? b + 16 : n;
        for (size_t i = b + 1; i < e; i++) {
            struct key v = src[i];
            size_t j = i;
            while (j > b && key_less(s, &v, &src[j - 1])) {
                src[j] = src[j - 1];
                j--;
            }
            src[j] = v;
        }
    }
    for (size_t w = 16; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi)
                dst[k++] = key_less(s, &src[b], &src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[k++] = src[a++];
            while (b < hi)
                dst[k++] = src[b++];
        }
        struct key *t = src;
        src = dst;
        dst = t;
    }
    if (src != s->keys)
        memcpy(s->keys, src, n * sizeof *src);
}

/* Make the keys of the buffered records and sort them (the arrays grow to the buffer's
 * size). TROVE_OK or TROVE_ERR_NOMEM. */
static int sort_buffer(struct trove__tsort *s)
{
    if (s->kcap < s->n) {
        struct key *k = trove__realloc(s->keys, s->n * sizeof *k), *t;
        if (!k)
            return TROVE_ERR_NOMEM;
        s->keys = k;
        if (!(t = trove__realloc(s->scratch, s->n * sizeof *t)))
            return TROVE_ERR_NOMEM;
        s->scratch = t;
        s->kcap = s->n;
    }
    for (size_t i = 0; i < s->n; i++)
        s->keys[i] = (struct key){key_of(s->order, &s->rec[i]), i};
    sort_keys(s, s->n);
    return TROVE_OK;
}

/* ---- the temporary files --------------------------------------------------------------- */

static int open_tmp(struct trove__tsort *s, int which, struct trove_diag *diag)
{
    char path[4200];
    int fd = -1;

#ifdef O_TMPFILE
    fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
    if (fd < 0) { /* a file system without O_TMPFILE */
        if ((size_t)snprintf(path, sizeof path, "%s/.trove-sort-XXXXXX", s->dir) >= sizeof path)
            return TROVE_FAIL(diag, -ENAMETOOLONG, 0,
                              "cannot make a temporary file in %.200s to sort the events: the "
                              "path is too long",
                              s->dir);
        if ((fd = mkstemp(path)) >= 0)
            unlink(path);
    }
    if (fd < 0) {
        int e = errno;
        return TROVE_FAIL(diag, -e, 0,
                          "cannot make a temporary file in %.3000s to sort the events: %s "
                          "(TMPDIR names another directory)",
                          s->dir, strerror(e));
    }
    s->fd[which] = fd;
    s->fend[which] = 0;
    return TROVE_OK;
}

static int io_error(const struct trove__tsort *s, int e, const char *what,
                    struct trove_diag *diag)
{
    return TROVE_FAIL(diag, -e, 0, "%s the temporary file that sorts the events (in %.3000s): %s",
                      what, s->dir, strerror(e));
}

/* Append wbuf[0..wn) to file `which`. */
static int flush_wbuf(struct trove__tsort *s, int which, struct trove_diag *diag)
{
    const uint8_t *p = (const uint8_t *)s->wbuf;
    size_t left = s->wn * RECSZ;

    while (left > 0) {
        ssize_t w = trove__io_write(s->fd[which], p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return io_error(s, w < 0 ? errno : ENOSPC, "writing", diag);
        p += w;
        left -= (size_t)w;
    }
    s->st.bytes += s->wn * RECSZ;
    s->fend[which] += s->wn;
    s->wn = 0;
    return TROVE_OK;
}

static int put_rec(struct trove__tsort *s, int which, const struct trove__tsrec *r,
                   struct trove_diag *diag)
{
    s->wbuf[s->wn++] = *r;
    return s->wn == WRITE_RECS ? flush_wbuf(s, which, diag) : TROVE_OK;
}

/* n records at record offset off of file fd into buf. */
static int read_recs(const struct trove__tsort *s, int fd, uint64_t off, struct trove__tsrec *buf,
                     size_t n, struct trove_diag *diag)
{
    uint8_t *p = (uint8_t *)buf;
    size_t left = n * RECSZ;
    off_t at = (off_t)(off * RECSZ);

    while (left > 0) {
        ssize_t r = trove__io_pread(fd, p, left, at);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return io_error(s, errno, "reading back", diag);
        if (r == 0)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                              "the temporary file that sorts the events is shorter than written");
        p += r;
        left -= (size_t)r;
        at += r;
    }
    return TROVE_OK;
}

/* The buffer, sorted, as one more run of the current file (made on the first spill). */
static int spill(struct trove__tsort *s, struct trove_diag *diag)
{
    int rc;
    uint64_t off;

    if (s->fd[s->cur] < 0 && (rc = open_tmp(s, s->cur, diag)) != TROVE_OK)
        return rc;
    if (!s->wbuf && !(s->wbuf = trove__malloc(WRITE_RECS * RECSZ)))
        return TROVE_ERR_NOMEM;
    if (s->nruns == s->runs_cap) {
        size_t cap = s->runs_cap ? s->runs_cap * 2 : 16;
        struct run *r = trove__realloc(s->runs, cap * sizeof *r);
        if (!r)
            return TROVE_ERR_NOMEM;
        s->runs = r;
        s->runs_cap = cap;
    }
    if ((rc = sort_buffer(s)) != TROVE_OK)
        return rc;
    off = s->fend[s->cur];
    for (size_t i = 0; i < s->n; i++)
        if ((rc = put_rec(s, s->cur, &s->rec[s->keys[i].i], diag)) != TROVE_OK)
            return rc;
    if ((rc = flush_wbuf(s, s->cur, diag)) != TROVE_OK)
        return rc;
    s->runs[s->nruns++] = (struct run){off, s->n};
    s->st.runs++;
    s->n = 0;
    return TROVE_OK;
}

/* ---- merging ----------------------------------------------------------------------------- */

static int cursor_less(const struct trove__tsort *s, const struct cursor *a,
                       const struct cursor *b)
{
    return cmp_rec(s->order, &a->buf[a->pos], &b->buf[b->pos]) < 0;
}

static void sift_down(const struct trove__tsort *s, struct merger *m, size_t i)
{
    uint32_t v = m->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m->hn)
            break;
        if (c + 1 < m->hn && cursor_less(s, &m->c[m->heap[c + 1]], &m->c[m->heap[c]]))
            c++;
        if (!cursor_less(s, &m->c[m->heap[c]], &m->c[v]))
            break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    m->heap[i] = v;
}

/* Fill cursor c's buffer from its run. */
static int refill(const struct trove__tsort *s, const struct merger *m, struct cursor *c,
                  struct trove_diag *diag)
{
    size_t k = c->left < CURSOR_RECS ? (size_t)c->left : CURSOR_RECS;
    int rc = read_recs(s, m->fd, c->off, c->buf, k, diag);
    if (rc != TROVE_OK)
        return rc;
    c->off += k;
    c->left -= k;
    c->pos = 0;
    c->len = k;
    return TROVE_OK;
}

/* Start merging runs[0..n) (n <= fan_in) of file fd. */
static int merger_open(struct trove__tsort *s, int fd, const struct run *runs, size_t n,
                       struct trove_diag *diag)
{
    struct merger *m = &s->m;
    int rc;

    m->fd = fd;
    m->nc = n;
    m->hn = 0;
    for (size_t i = 0; i < n; i++) {
        struct cursor *c = &m->c[i];
        c->buf = s->cbuf + i * CURSOR_RECS;
        c->off = runs[i].off;
        c->left = runs[i].n;
        c->pos = c->len = 0;
        if (c->left == 0)
            continue;
        if ((rc = refill(s, m, c, diag)) != TROVE_OK)
            return rc;
        m->heap[m->hn++] = (uint32_t)i;
    }
    for (size_t i = m->hn / 2; i-- > 0;)
        sift_down(s, m, i);
    return TROVE_OK;
}

static const struct trove__tsrec *merger_head(const struct merger *m)
{
    const struct cursor *c;
    if (m->hn == 0)
        return NULL;
    c = &m->c[m->heap[0]];
    return &c->buf[c->pos];
}

static int merger_next(struct trove__tsort *s, struct trove_diag *diag)
{
    struct merger *m = &s->m;
    struct cursor *c = &m->c[m->heap[0]];
    int rc;

    if (++c->pos == c->len) {
        if (c->left == 0) {
            m->heap[0] = m->heap[--m->hn];
            if (m->hn)
                sift_down(s, m, 0);
            return TROVE_OK;
        }
        if ((rc = refill(s, m, c, diag)) != TROVE_OK)
            return rc;
    }
    sift_down(s, m, 0);
    return TROVE_OK;
}

/* One pass: the runs of the current file merged fan_in at a time into the other, which
 * becomes the current one; the old one is emptied. */
static int merge_pass(struct trove__tsort *s, struct trove_diag *diag)
{
    int from = s->cur, to = !s->cur, rc;
    size_t out = 0;

    if (s->fd[to] < 0 && (rc = open_tmp(s, to, diag)) != TROVE_OK)
        return rc;
    if (ftruncate(s->fd[to], 0) != 0 || lseek(s->fd[to], 0, SEEK_SET) != 0)
        return io_error(s, errno, "emptying", diag);
    s->fend[to] = 0;
    for (size_t g = 0; g < s->nruns; g += s->opt.fan_in) {
        size_t k = s->nruns - g < s->opt.fan_in ? s->nruns - g : s->opt.fan_in;
        uint64_t off = s->fend[to], n = 0;
        const struct trove__tsrec *r;
        if ((rc = merger_open(s, s->fd[from], s->runs + g, k, diag)) != TROVE_OK)
            return rc;
        while ((r = merger_head(&s->m)) != NULL) {
            if ((rc = put_rec(s, to, r, diag)) != TROVE_OK ||
                (rc = merger_next(s, diag)) != TROVE_OK)
                return rc;
            n++;
        }
        if ((rc = flush_wbuf(s, to, diag)) != TROVE_OK)
            return rc;
        s->runs[out++] = (struct run){off, n};
    }
    s->nruns = out;
    s->cur = to;
    s->st.passes++;
    if (ftruncate(s->fd[from], 0) != 0) /* its disk space back */
        return io_error(s, errno, "emptying", diag);
    s->fend[from] = 0;
    return TROVE_OK;
}

/* ---- the sorter --------------------------------------------------------------------------- */

int trove__tsort_new(int order, const struct trove__tsort_options *opt, struct trove__tsort **out)
{
    struct trove__tsort *s;

    *out = NULL;
    if (!(s = trove__calloc(1, sizeof *s)))
        return TROVE_ERR_NOMEM;
    s->order = order;
    s->opt = *opt;
    s->fd[0] = s->fd[1] = -1;
    if (!(s->dir = trove__strdup(opt->dir ? opt->dir : "/tmp"))) {
        free(s);
        return TROVE_ERR_NOMEM;
    }
    s->opt.dir = s->dir;
    *out = s;
    return TROVE_OK;
}

void trove__tsort_free(struct trove__tsort *s)
{
    if (!s)
        return;
    for (int i = 0; i < 2; i++)
        if (s->fd[i] >= 0)
            close(s->fd[i]);
    free(s->rec);
    free(s->keys);
    free(s->scratch);
    free(s->runs);
    free(s->wbuf);
    free(s->cbuf);
    free(s->m.c);
    free(s->m.heap);
    free(s->dir);
    free(s);
}

int trove__tsort_add(struct trove__tsort *s, const struct trove__tsrec *r, struct trove_diag *diag)
{
    int rc;

    if (s->n == s->opt.run && (rc = spill(s, diag)) != TROVE_OK)
        return rc;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct trove__tsrec *p;
        if (cap > s->opt.run)
            cap = s->opt.run;
        if (!(p = trove__realloc(s->rec, cap * sizeof *p)))
            return TROVE_ERR_NOMEM;
        s->rec = p;
        s->cap = cap;
    }
    s->rec[s->n++] = *r;
    s->count++;
    return TROVE_OK;
}

int trove__tsort_finish(struct trove__tsort *s, struct trove_diag *diag)
{
    size_t k;
    int rc;

    if (s->nruns == 0) { /* all in memory */
        if ((rc = sort_buffer(s)) != TROVE_OK)
            return rc;
        free(s->scratch);
        s->scratch = NULL;
        s->in_memory = 1;
        s->finished = 1;
        return trove__tsort_rewind(s, diag);
    }
    if (s->n && (rc = spill(s, diag)) != TROVE_OK)
        return rc;
    free(s->rec); /* the run buffer's memory, back before the merges */
    free(s->keys);
    free(s->scratch);
    s->rec = NULL;
    s->keys = s->scratch = NULL;
    s->cap = s->kcap = 0;
    k = s->nruns < s->opt.fan_in ? s->nruns : s->opt.fan_in;
    if (!(s->cbuf = trove__malloc(k * CURSOR_RECS * RECSZ)) ||
        !(s->m.c = trove__calloc(k, sizeof *s->m.c)) ||
        !(s->m.heap = trove__malloc(k * sizeof *s->m.heap)))
        return TROVE_ERR_NOMEM;
    while (s->nruns > s->opt.fan_in)
        if ((rc = merge_pass(s, diag)) != TROVE_OK)
            return rc;
    free(s->wbuf);
    s->wbuf = NULL;
    s->finished = 1;
    return trove__tsort_rewind(s, diag);
}

int trove__tsort_rewind(struct trove__tsort *s, struct trove_diag *diag)
{
    int rc;

    if (s->in_memory) {
        s->pos = 0;
        s->head = s->n ? &s->rec[s->keys[0].i] : NULL;
        return TROVE_OK;
    }
    if ((rc = merger_open(s, s->fd[s->cur], s->runs, s->nruns, diag)) != TROVE_OK)
        return rc;
    s->head = merger_head(&s->m);
    return TROVE_OK;
}

const struct trove__tsrec *trove__tsort_head(const struct trove__tsort *s) { return s->head; }

int trove__tsort_next(struct trove__tsort *s, struct trove_diag *diag)
{
    int rc;

    if (s->in_memory) {
        s->pos++;
        s->head = s->pos < s->n ? &s->rec[s->keys[s->pos].i] : NULL;
        return TROVE_OK;
    }
    if ((rc = merger_next(s, diag)) != TROVE_OK)
        return rc;
    s->head = merger_head(&s->m);
    return TROVE_OK;
}

uint64_t trove__tsort_count(const struct trove__tsort *s) { return s->count; }

void trove__tsort_stats(const struct trove__tsort *s, struct trove__tsort_stats *out)
{
    *out = s->st;
}
