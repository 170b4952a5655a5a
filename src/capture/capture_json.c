/*
 * capture_json.c: a capture as one JSON object, the one contract `trove ls --json` and the
 * service's GET /api/captures share (docs/serve.md, "A capture as JSON"), and the time span
 * of a capture that holds samples and no events.
 *
 * One writer for both, so that a key cannot drift between them: the members are written
 * here without the braces, and the caller closes the object after adding what only it knows
 * (the service: whether the capture is live, and its producers). Every member is written
 * for every capture, with zeros or null where a capture has nothing, so that a reader never
 * guesses which keys to expect. Names are volume names ([A-Za-z0-9._-]), which need no
 * escaping.
 *
 * The span of a samples-only capture (`trove record NAME -- CMD`, or an imported profile)
 * is not in its header, which states the events' span only: it is read from the profile
 * (every profile object, decoded), so it costs what reading the profile costs, and only for
 * such a capture.
 */
#include "capture_internal.h"
#include "common/fail.h"
#include "trove/profile.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int trove_capture_listing_json(const struct trove_capture_listing *l, struct trove_bytes *out)
{
    const struct trove_capture_info *i;
    char buf[768];
    int n;

    if (!l || !l->name || !out || trove_volume_name_check(l->name, NULL) != TROVE_OK)
        return TROVE_ERR_INVALID;
    i = &l->info;
    n = snprintf(buf, sizeof buf,
                 "\"name\":\"%s\",\"events\":%" PRIu64 ",\"segments\":%" PRIu64
                 ",\"names\":%" PRIu64 ",\"flows\":%" PRIu64 ",\"samples\":%" PRIu64
                 ",\"switches\":%" PRIu64 ",\"first_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
                 ",\"raw_bytes\":%" PRIu64 ",\"stored_bytes\":%" PRIu64
                 ",\"attr_rows\":%" PRIu64 ",\"attrs_bytes\":%" PRIu64
                 ",\"segment_format\":\"%s\",\"damaged\":%" PRIu64 ",\"last_used_ns\":",
                 l->name, i->events, i->segments, i->names, i->flows, i->samples, i->switches,
                 i->first_ns, i->end_ns, i->raw_bytes, i->stored_bytes, i->attr_rows,
                 i->attrs_bytes,
                 trove_capture_segment_format_name(i->flags), l->damaged);
    if (n < 0 || (size_t)n >= sizeof buf)
        return TROVE_ERR_LIMIT;
    if (l->have_used)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%" PRIu64, l->last_used_ns);
    else
        n += snprintf(buf + n, sizeof buf - (size_t)n, "null");
    return trove_bytes_append(out, buf, (size_t)n);
}

int trove_capture_samples_span(struct trove_store *s, const char *name,
                               struct trove_capture_info *info, struct trove_diag *diag)
{
    struct trove_profile *p = NULL;
    const struct trove_profile_sample *smp;
    size_t n;
    int rc;

    if (!s || !info)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "samples span needs a store and an info");
    if (info->events > 0 || info->samples == 0)
        return TROVE_OK; /* the header's span is the events' */
    if ((rc = trove_profile_new(&p)) != TROVE_OK)
        return TROVE_FAIL(diag, rc, 0, "out of memory");
    if ((rc = trove_capture_read_profile(s, name, p, diag)) != TROVE_OK)
        goto out;
    smp = trove_profile_samples(p);
    n = trove_profile_sample_count(p);
    for (size_t k = 0; k < n; k++) {
        if (k == 0 || smp[k].time_ns < info->first_ns)
            info->first_ns = smp[k].time_ns;
        if (k == 0 || smp[k].time_ns > info->end_ns)
            info->end_ns = smp[k].time_ns;
    }
    rc = TROVE_OK;
out:
    trove_profile_free(p);
    return rc;
}
