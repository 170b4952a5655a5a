/*
 * bundle.c: the capture bundle's entry-name rule (trove_bundle_name_check,
 * include/trove/bundle.h), the one rule both halves of the bundle hold names to: the zip
 * container (bundle_zip.c) for every entry it writes or opens, and the manifest
 * (bundle_manifest.c) for the tables it lists.
 *
 *   bundle.zip := the Parquet tables (events.parquet, names.parquet, ...) | manifest.json
 *                 as entries of a plain zip, at the top or in one FOLDER/
 *
 * Why it is built this way: a name from a zip is outside input that unzip tools turn into
 * paths, so the rule refuses what could escape or alias a folder (absolute paths, "." and
 * "..", empty components, '\\' and ':') and what libzip rewrites on the way in (a stored NUL
 * arrives as a space, so the space is refused too); it is written once so the container
 * and the manifest cannot drift apart.
 */
#include "trove/bundle.h"

#include <stdint.h>

#include "common/utf8.h"

int trove_bundle_name_check(const char *name, size_t len, const char **why_out)
{
    const char *why = NULL;
    size_t i, comp = 0;

    if (!name || len == 0)
        why = "empty name";
    else if (len > TROVE_BUNDLE_MAX_NAME)
        why = "name longer than 255 bytes";
    else if (trove__utf8_valid_prefix((const uint8_t *)name, len) != len)
        why = "name is not valid UTF-8";
    else if (name[0] == '/')
        why = "absolute path";
    for (i = 0; !why && i <= len; i++) {
        unsigned char c = i < len ? (unsigned char)name[i] : '/';
        if (c == '/') {
            size_t clen = i - comp;
            if (clen == 0)
                why = "empty path component";
            else if (clen == 1 && name[comp] == '.')
                why = "\".\" component";
            else if (clen == 2 && name[comp] == '.' && name[comp + 1] == '.')
                why = "\"..\" component";
            comp = i + 1;
        } else if (c == '\\') {
            why = "backslash in name";
        } else if (c == ':') {
            why = "colon (drive letter) in name";
        } else if (c == 0) {
            why = "NUL in name";
        } else if (c <= 0x20 || c == 0x7F) {
            why = "space or control character in name";
        }
    }
    if (why_out)
        *why_out = why;
    return why ? TROVE_ERR_INVALID : TROVE_OK;
}
