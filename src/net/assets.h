/*
 * assets.h (internal): the viewer's files (web/), compiled into the service. The build
 * runs tools/embed_web.py over the files of web/ into a generated C file of byte arrays
 * (trove__web_assets), so `trove serve` answers `/` and `/web/NAME` from memory: no request path ever reaches
 * the filesystem, and an installed binary needs nothing beside it. The table is sorted by
 * name; a name is flat ([A-Za-z0-9._-], no '/').
 */
#ifndef TROVE_NET_ASSETS_H
#define TROVE_NET_ASSETS_H

#include <stddef.h>

struct trove__web_asset {
    const char *name;          /* "app.js": served at /web/app.js */
    const char *type;          /* its Content-Type */
    const unsigned char *data; /* its bytes, static */
    size_t len;
};

extern const struct trove__web_asset trove__web_assets[];
extern const unsigned trove__web_nassets;

/* The asset called name (exactly; NULL if none), and its index in *index_out if found. The
 * result is static: valid for the life of the program. */
const struct trove__web_asset *trove__web_asset_find(const char *name, int *index_out);

#endif
