/*
 * summary_store.c: a capture's summary nodes in its volume (docs/formats/summary.md) — where
 * they sit, how the tree above the segments' nodes is built as segments come, and
 * trove_capture_index, which gives a capture that lacks them (or whose summaries are
 * damaged) its summaries from its segments.
 *
 * The summary slots follow every other slot of the capture (its profile's last): the nodes
 * of level 0 (one per segment, in segment order), then those of level 1, and so on up to the
 * level of one node. Level L has ceil(S / 64^L) nodes and exists while the level below has
 * more than one, so S segments take S + ceil(S/64) + ... slots (one for S = 1, none for 0).
 */
#include "capture_internal.h"
#include "summary_internal.h"
#include "common/alloc.h"
#include "common/fail.h"
#include "trove/wire.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

unsigned trove__summary_levels(uint64_t segments, uint64_t count[TROVE__SUMMARY_MAX_LEVELS])
{
    unsigned levels = 0;
    uint64_t n = segments;

    if (segments == 0)
        return 0;
    count[levels++] = n;
    while (n > 1 && levels < TROVE__SUMMARY_MAX_LEVELS) {
        n = trove__div_up(n, TROVE_SUMMARY_FANOUT);
        count[levels++] = n;
    }
    return levels;
}

uint64_t trove__summary_slots(uint64_t segments)
{
    uint64_t count[TROVE__SUMMARY_MAX_LEVELS], total = 0;
    unsigned levels = trove__summary_levels(segments, count);

    for (unsigned l = 0; l < levels; l++)
        total += count[l];
    return total;
}

/* Segments a node of level L covers. */
static uint64_t span_of(unsigned level)
{
    uint64_t n = 1;
    for (unsigned l = 0; l < level; l++)
        n *= TROVE_SUMMARY_FANOUT;
    return n;
}

uint64_t trove__summary_sealed(const struct trove_capture_header *h)
{
    uint64_t s = h->info.segments;
    return s > 0 && h->seg[s - 1].events < h->segment_bytes / TROVE_EVENT_SIZE ? s - 1 : s;
}

/*
 * The complete nodes come first, in the order they complete (a segment's node, then each
 * node above that it completes, lowest level first: a post-order of the tree), so that a
 * growing capture only appends to them; then each level's last node while it waits for
 * children, lowest level first. Node (L, i), complete, is preceded by the nodes of levels
 * up to L that complete with or before it, and by those above L that complete before it.
 */
uint64_t trove__summary_slot_of(uint64_t segments, uint64_t sealed, unsigned level,
                                uint64_t index)
{
    uint64_t count[TROVE__SUMMARY_MAX_LEVELS], pos = 0, done = 0;
    unsigned levels = trove__summary_levels(segments, count);

    if (index < sealed / span_of(level)) {
        uint64_t last = (index + 1) * span_of(level); /* segments sealed when it completes */
        for (unsigned l = 0; l < TROVE__SUMMARY_MAX_LEVELS; l++)
            pos += l <= level ? last / span_of(l) : (last - 1) / span_of(l);
        return pos - 1;
    }
    for (unsigned l = 0; l < levels; l++)
        done += sealed / span_of(l);
    for (unsigned l = 0; l < level && l < levels; l++)
        pos += count[l] > sealed / span_of(l);
    return done + pos;
}

/* ---- the tree, segment by segment ------------------------------------------------------ */

static int merge_failed(int rc, struct trove_diag *diag)
{
    return TROVE_FAIL(diag, rc, 0, "merging summaries: %s", trove_strerror(rc));
}

static int put_node(struct trove__sumtree *t, const struct trove_summary *node, unsigned level,
                    uint64_t index, int draft, trove__sumput_fn put, void *ctx,
                    struct trove_diag *diag)
{
    struct trove_summary stored;
    int rc;

    t->buf.len = 0;
    memset(&stored, 0, sizeof stored);
    /* a segment's node is stored as coarse as the level-0 budget says (it was built finer
     * for its parent) */
    if (level == 0 && (rc = trove_summary_join(&stored, node, NULL, 0, 0)) != TROVE_OK)
        return merge_failed(rc, diag);
    rc = trove__summary_encode_draft(level == 0 ? &stored : node, draft, &t->buf);
    trove_summary_free(&stored);
    if (rc != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "encoding the summary of level %u, node %" PRIu64 ": %s",
                          level, index, trove_strerror(rc));
    return put(ctx, level, index, t->buf.ptr, t->buf.len, diag);
}

/*
 * Child `pos` (0 .. 63) of level l's last node: into the level's bins, a binary counter of
 * merged runs (bin j holds 2^j children), so that each child is copied about log2(64) times
 * rather than once per later sibling. The child is moved from *child.
 */
static int add_child(struct trove__sumtree *t, unsigned l, struct trove_summary *child,
                     uint64_t pos)
{
    struct trove__sumbin carry;
    unsigned j = 0;
    int rc;

    memset(&carry, 0, sizeof carry);
    if (child->ncells + child->nlongs <= trove__summary_budget(l, child->events)) {
        carry.node = *child; /* within the level's budget: the node as it is, moved */
        carry.node.level = l;
        memset(child, 0, sizeof *child);
    } else {
        if ((rc = trove_summary_join(&carry.node, child, NULL, 0, l)) != TROVE_OK)
            return rc;
        trove_summary_free(child);
    }
    carry.first = pos;
    carry.used = 1;
    if (l >= 2) {
        /* Above level 1 the children are whole nodes that share most names: bins would hold
         * as many copies of the names' sketches as they are bins, so one accumulator takes
         * them in turn (a child's copy for each of 64 joins, each under a level-1 node's
         * events of work); the 64th makes it complete (the top bin). */
        struct trove__sumbin *b = &t->bin[l][0];
        if (b->used) {
            uint64_t base = (carry.first - b->first) * span_of(l - 1) * t->per;
            rc = trove_summary_join(&b->node, &b->node, &carry.node, base, l);
            trove_summary_free(&carry.node);
            if (rc != TROVE_OK)
                return rc;
        } else {
            *b = carry;
        }
        if (pos == TROVE_SUMMARY_FANOUT - 1) {
            t->bin[l][TROVE__SUMTREE_BINS] = *b;
            memset(b, 0, sizeof *b);
        }
        return TROVE_OK;
    }
    while (j < TROVE__SUMTREE_BINS && t->bin[l][j].used) {
        struct trove__sumbin *b = &t->bin[l][j];
        uint64_t base = (carry.first - b->first) * span_of(l - 1) * t->per;
        if ((rc = trove_summary_join(&b->node, &b->node, &carry.node, base, l)) != TROVE_OK) {
            trove_summary_free(&carry.node);
            return rc;
        }
        trove_summary_free(&carry.node);
        carry = *b;
        memset(b, 0, sizeof *b);
        j++;
    }
    t->bin[l][j] = carry;
    return TROVE_OK;
}

/* Level l's bins joined, earliest first, into *out (zeroed when none is used). */
static int join_bins(struct trove__sumtree *t, unsigned l, struct trove_summary *out,
                     uint64_t *first_out)
{
    int have = 0, rc;

    memset(out, 0, sizeof *out);
    *first_out = 0;
    for (unsigned j = TROVE__SUMTREE_BINS + 1; j-- > 0;) {
        const struct trove__sumbin *b = &t->bin[l][j];
        if (!b->used)
            continue;
        if (!have) {
            rc = trove_summary_join(out, &b->node, NULL, 0, l);
            *first_out = b->first;
            have = 1;
        } else {
            rc = trove_summary_join(out, out, &b->node,
                                    (b->first - *first_out) * span_of(l - 1) * t->per, l);
        }
        if (rc != TROVE_OK) {
            trove_summary_free(out);
            return rc;
        }
    }
    return TROVE_OK;
}

int trove__sumtree_restore(struct trove__sumtree *t, unsigned level, struct trove_summary *child,
                           uint64_t pos)
{
    return add_child(t, level, child, pos);
}

int trove__sumtree_seal(struct trove__sumtree *t, struct trove_summary *leaf,
                        trove__sumput_fn put, void *ctx, struct trove_diag *diag)
{
    struct trove_summary child;
    uint64_t index = t->sealed;
    int rc;

    if ((rc = put_node(t, leaf, 0, index, 0, put, ctx, diag)) != TROVE_OK)
        return rc;
    child = *leaf; /* taken: the caller's is emptied */
    memset(leaf, 0, sizeof *leaf);
    /* Each level's bins take the node below; a node that got its last child (all 64 in its
     * top bin) is complete: it is put, and goes up in turn. */
    for (unsigned l = 1; l < TROVE__SUMMARY_MAX_LEVELS; l++) {
        struct trove__sumbin *top = &t->bin[l][TROVE__SUMTREE_BINS];
        if ((rc = add_child(t, l, &child, index % TROVE_SUMMARY_FANOUT)) != TROVE_OK) {
            trove_summary_free(&child);
            return merge_failed(rc, diag);
        }
        if (!top->used)
            break;
        index /= TROVE_SUMMARY_FANOUT;
        if ((rc = put_node(t, &top->node, l, index, 0, put, ctx, diag)) != TROVE_OK)
            return rc;
        child = top->node;
        memset(top, 0, sizeof *top);
    }
    trove_summary_free(&child);
    t->sealed++;
    return TROVE_OK;
}

int trove__sumtree_finish(struct trove__sumtree *t, const struct trove_summary *partial,
                          trove__sumput_fn put, void *ctx, struct trove_diag *diag)
{
    uint64_t count[TROVE__SUMMARY_MAX_LEVELS];
    uint64_t segments = t->sealed + (partial != NULL);
    unsigned levels = trove__summary_levels(segments, count);
    struct trove_summary cur, node;
    int have = 0, rc = TROVE_OK;

    memset(&cur, 0, sizeof cur);
    if (partial &&
        (rc = put_node(t, partial, 0, t->sealed, t->draft, put, ctx, diag)) != TROVE_OK)
        return rc;
    /* Each level's last node, when it is not complete (a complete one was put when it got
     * its last child): its bins, and the partial child below. */
    for (unsigned l = 1; l < levels; l++) {
        uint64_t last = count[l] - 1, child = count[l - 1] - 1, first;
        const struct trove_summary *below = l == 1 ? partial : have ? &cur : NULL;
        if ((last + 1) * span_of(l) <= t->sealed) { /* all its segments are full */
            trove_summary_free(&cur);
            have = 0;
            continue;
        }
        if ((rc = join_bins(t, l, &node, &first)) != TROVE_OK)
            goto fail;
        if (below && node.level == 0 && node.events == 0 && !node.tracks) {
            rc = trove_summary_join(&node, below, NULL, 0, l);
        } else if (below) {
            rc = trove_summary_join(&node, &node, below,
                                    ((child % TROVE_SUMMARY_FANOUT) - first) * span_of(l - 1) *
                                        t->per,
                                    l);
        }
        if (rc != TROVE_OK) {
            trove_summary_free(&node);
            goto fail;
        }
        node.level = l;
        trove_summary_free(&cur);
        cur = node;
        have = 1;
        if ((rc = put_node(t, &cur, l, last, t->draft, put, ctx, diag)) != TROVE_OK)
            goto out;
    }
    goto out;
fail:
    rc = merge_failed(rc, diag);
out:
    trove_summary_free(&cur);
    return rc;
}

void trove__sumtree_free(struct trove__sumtree *t)
{
    for (unsigned l = 0; l < TROVE__SUMMARY_MAX_LEVELS; l++)
        for (unsigned j = 0; j <= TROVE__SUMTREE_BINS; j++)
            trove_summary_free(&t->bin[l][j].node);
    trove_bytes_free(&t->buf);
    memset(t, 0, sizeof *t);
}

/* ---- reading a segment's events -------------------------------------------------------- */

int trove__summary_read_segment(struct trove_volume *v, const struct trove_capture_header *h,
                                const char *name, uint64_t k, struct trove_wire_decoder *dec,
                                struct trove_bytes *obj, struct trove_event *ev, size_t cap,
                                size_t *n_out, struct trove_diag *diag)
{
    const struct trove_capture_segment *g = &h->seg[k];
    size_t at = 0, n = 0;
    int rc;

    *n_out = 0;
    obj->len = 0;
    if ((rc = trove_volume_get_object(v, TROVE__CAPTURE_SLOT_SEGMENT0 + k, obj)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "capture %s: segment %" PRIu64 ": %s%s", name, k,
                          trove_strerror(rc),
                          rc == TROVE_ERR_CHECKSUM ? " (the object is damaged: `trove verify "
                                                     "--deep` lists every damaged one)"
                                                   : "");
    if (obj->len != g->bytes)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "capture %s: segment %" PRIu64 " is %zu bytes; its header says %" PRIu32,
                          name, k, obj->len, g->bytes);
    while (at < obj->len) {
        struct trove_wire_frame fr;
        if ((rc = trove_wire_decode(dec, obj->ptr + at, obj->len - at, ev + n, cap - n, NULL, &fr,
                                    diag)) != TROVE_OK)
            return rc;
        if (fr.format != TROVE_WIRE_DEFLATE && fr.format != TROVE_WIRE_COLUMNAR &&
            fr.format != TROVE_WIRE_MODEL)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "capture %s: segment %" PRIu64 " holds a frame of format %d",
                              name, k, fr.format);
        n += fr.n_events;
        at += fr.frame_len;
    }
    if (n != g->events)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "capture %s: segment %" PRIu64 " holds %zu events; its header says %"
                          PRIu32,
                          name, k, n, g->events);
    *n_out = n;
    return TROVE_OK;
}

/* ---- the one-shot write's summaries ----------------------------------------------------- */

int trove__summary_write(const struct trove_capture_header *h, const struct trove_event *events,
                         uint64_t per, trove__sumput_fn put, void *ctx, struct trove_diag *diag)
{
    struct trove__sumtree t;
    struct trove_summary partial;
    int rc = TROVE_OK, have = 0;

    memset(&t, 0, sizeof t);
    memset(&partial, 0, sizeof partial);
    t.per = per;
    for (uint64_t k = 0; k < h->info.segments && rc == TROVE_OK; k++) {
        struct trove_summary leaf;
        size_t first = (size_t)(k * per);
        size_t n = h->info.events - first < per ? (size_t)(h->info.events - first) : (size_t)per;
        if ((rc = trove_summary_build(events + first, n, &leaf)) != TROVE_OK) {
            rc = TROVE_FAIL(diag, rc, 0, "summarizing segment %" PRIu64 ": %s", k,
                            trove_strerror(rc));
            break;
        }
        if (n < per) { /* the last, not full: its node waits for more, as a live one would */
            partial = leaf;
            have = 1;
            break;
        }
        rc = trove__sumtree_seal(&t, &leaf, put, ctx, diag);
        trove_summary_free(&leaf);
    }
    if (rc == TROVE_OK)
        rc = trove__sumtree_finish(&t, have ? &partial : NULL, put, ctx, diag);
    trove_summary_free(&partial);
    trove__sumtree_free(&t);
    return rc;
}
