/*
 * chrome_json.h (internal to src/codec, and for tests and fuzzers): the Chrome importer
 * with a chosen read size, so that tests and the fuzzer can put chunk boundaries inside
 * every token. Not part of the public API; trove_chrome_import_all() is this with 1 MiB reads.
 */
#ifndef TROVE_CHROME_JSON_H
#define TROVE_CHROME_JSON_H

#include <stdio.h>

#include "trove/flows.h"
#include "trove/chrome.h"

int trove__chrome_import_chunked(FILE *in, size_t chunk, const struct trove_chrome_options *opt,
                                 struct trove_events *events, struct trove_names *names,
                                 struct trove_flows *flows, struct trove_chrome_stats *stats,
                                 struct trove_diag *diag);

#endif
