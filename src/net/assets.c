/*
 * assets.c: finding one of the viewer's embedded files by name (assets.h). The names are
 * compared whole against the generated table, so a path that is not exactly one of them
 * (a '..', a '/', an encoded byte) finds nothing; there is no other way to a file.
 */
#include "assets.h"

#include <string.h>

const struct trove__web_asset *trove__web_asset_find(const char *name, int *index_out)
{
    unsigned lo = 0, hi = trove__web_nassets;

    if (!name)
        return NULL;
    while (lo < hi) { /* the table is sorted by name */
        unsigned mid = lo + (hi - lo) / 2;
        int c = strcmp(name, trove__web_assets[mid].name);
        if (c == 0) {
            if (index_out)
                *index_out = (int)mid;
            return &trove__web_assets[mid];
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}
