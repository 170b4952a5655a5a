/*
 * trace_read.c: Perfetto traces as input (in_load_perfetto_mem, which read.c calls with the
 * trace read whole). The format is the codec's (include/trove/trace.h, trove_perfetto_read);
 * this file names the input in its errors and counts what was dropped as warnings.
 */
#include <stdio.h>

#include "input_internal.h"
#include "trove/trace.h"

int in_load_perfetto_mem(const char *label, const uint8_t *buf, size_t len,
                         const struct trove_input_options *opt, struct trove_events *events,
                         struct trove_names *names, struct trove_flows *flows,
                         struct trove_diag *diag)
{
    struct trove_perfetto_options po = {opt->strict, 0, opt->profile, opt->attrs};
    struct trove_perfetto_stats st;
    struct trove_diag d = {0};
    int rc = trove_perfetto_read(buf, len, &po, events, names, flows, &st, &d);

    if (rc != TROVE_OK)
        return trove_diag_set(diag, rc, d.offset,
                              "%s (read as a Perfetto trace): at byte %llu: %s%s", label,
                              (unsigned long long)d.offset, in_msg(&d, rc),
                              rc == TROVE_ERR_UNMATCHED ? " (without --strict, unmatched slices "
                                                          "are dropped with a warning)"
                                                        : "");
    if (st.unmatched_begin || st.unmatched_end)
        trove_warn(opt->warnings, st.unmatched_begin + st.unmatched_end,
                   "%s: dropped %llu slices never ended and %llu ends never begun", label,
                   (unsigned long long)st.unmatched_begin, (unsigned long long)st.unmatched_end);
    if (st.skipped_packets || st.skipped_events)
        trove_warn(opt->warnings, st.skipped_packets + st.skipped_events,
                   "%s: skipped %llu packets and %llu track events of kinds trove does not read",
                   label, (unsigned long long)st.skipped_packets,
                   (unsigned long long)st.skipped_events);
    /* what the kept track events carried that is not kept (docs/formats/perfetto.md) */
    if (st.annotated_events)
        trove_warn(opt->warnings, st.annotated_events,
                   "%s: not kept: the debug annotations of %llu track events (%llu annotations)%s",
                   label, (unsigned long long)st.annotated_events,
                   (unsigned long long)st.annotations,
                   opt->attrs ? "; values that do not read (an interned string never "
                                "interned, a nested value malformed or over 32 levels), and "
                                "those of slice ends and events trove skips keep none"
                              : "; trove keeps no event attributes");
    if (st.category_events)
        trove_warn(opt->warnings, st.category_events,
                   "%s: not kept: the categories of %llu track events", label,
                   (unsigned long long)st.category_events);
    if (st.log_messages)
        trove_warn(opt->warnings, st.log_messages, "%s: not kept: %llu log messages", label,
                   (unsigned long long)st.log_messages);
    if (st.other_fields)
        trove_warn(opt->warnings, st.other_fields,
                   "%s: not kept: %llu fields of track events trove does not read", label,
                   (unsigned long long)st.other_fields);
    return 0;
}
