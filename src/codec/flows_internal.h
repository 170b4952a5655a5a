/*
 * flows_internal.h: what the two versions of the flows object share (src/codec/flows.c holds
 * version 1, src/codec/flows_events.c version 2, coded against the events, and the way in).
 */
#ifndef TROVE_CODEC_FLOWS_INTERNAL_H
#define TROVE_CODEC_FLOWS_INTERNAL_H

#include "trove/flows.h"

#define TROVE__FLOWS_MAGIC "TROVFLW1"
#define TROVE__FLOWS_WHAT "flows object"

#define TROVE__FLOWS_V1_FIXED 40u /* a version 1 object before its deflate stream */

/* Decode the body of a version 1 object whose magic, version and checksum were checked:
 * the rows to a scratch array, then appended to out. */
int trove__flows_v1_decode(const uint8_t *buf, size_t len, struct trove_flows *out,
                           struct trove_diag *diag);

/* Append rows[0..n) to out: TROVE_OK, or TROVE_ERR_NOMEM (with diag) and out unchanged. */
int trove__flows_take(struct trove_flows *out, const struct trove_flow *rows, size_t n,
                      struct trove_diag *diag);

#endif
