/*
 * profile_internal.h (internal to src/codec): what the samples frame's decoder
 * (profile_wire.c) needs of the profile model (profile.c) beyond trove/profile.h.
 */
#ifndef TROVE_PROFILE_INTERNAL_H
#define TROVE_PROFILE_INTERNAL_H

#include "trove/profile.h"

/* Drop every row past the counts c (each at most the profile's own): the profile is then
 * exactly as it was when it had those counts, its indexes rebuilt. For undoing a frame
 * that failed half way. */
void trove__profile_truncate(struct trove_profile *p, const struct trove_profile_counts *c);

#endif
