/*
 * name.c: the rule for volume and snapshot names (include/trove/volume.h).
 *
 * A name becomes a file name (DIR/volumes/NAME.recipe) and goes into messages, so the rule
 * is narrow on purpose: 1..TROVE_VOLUME_NAME_MAX bytes of the ASCII set [A-Za-z0-9._-], and
 * not starting with '.' (no ".", "..", hidden files) or '-' (no names that read as options
 * on a command line). No '/', no NUL, no spaces, no bytes >= 0x80, so a name is the same
 * string on every filesystem and in every locale and needs no quoting or normalisation.
 * The classes are spelled out as ranges rather than taken from <ctype.h>, whose answers
 * depend on the locale. The check stops at the first rule broken and says which one in
 * diag, at the offending byte's offset, quoting the name with unprintable bytes escaped
 * (\xNN) and long names cut short, so the message is always one safe, printable line.
 */
#include "trove/volume.h"

#include "common/fail.h"

#include <string.h>

/* Bytes of the name quoted in a message; the rest is shown as "...". */
#define QUOTE_MAX 32

static int name_byte_ok(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

/* Write name (at most QUOTE_MAX bytes of it) into out as printable ASCII: '"' and '\\' get a
 * backslash, bytes outside 0x20..0x7e become \xNN, and a longer name ends in "...". out
 * holds 4 bytes per quoted byte, the "..." and the NUL. */
static void quote(const char *name, size_t len, char out[4 * QUOTE_MAX + 4])
{
    static const char hex[] = "0123456789abcdef";
    size_t n = len < QUOTE_MAX ? len : QUOTE_MAX, o = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c >= 0x20 && c <= 0x7e) {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    if (len > n) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

int trove_volume_name_check(const char *name, struct trove_diag *diag)
{
    char q[4 * QUOTE_MAX + 4];
    size_t len;

    if (!name)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no volume name given (NULL)");
    len = strlen(name);
    quote(name, len, q);
    if (len == 0)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "volume name is empty; a name is 1 to %d bytes of A-Z a-z 0-9 . _ -",
                          TROVE_VOLUME_NAME_MAX);
    if (len > TROVE_VOLUME_NAME_MAX)
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, TROVE_VOLUME_NAME_MAX,
                          "volume name \"%s\" is %zu bytes, over the limit of %d; choose a "
                          "shorter name",
                          q, len, TROVE_VOLUME_NAME_MAX);
    if (name[0] == '.' || name[0] == '-')
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "volume name \"%s\" starts with '%c'; a name may not start with '.' "
                          "or '-'",
                          q, name[0]);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (name_byte_ok(c))
            continue;
        if (c >= 0x21 && c <= 0x7e)
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, i,
                              "volume name \"%s\" has '%c' at byte %zu; a name may contain only "
                              "A-Z a-z 0-9 . _ -",
                              q, (char)c, i);
        else
            return TROVE_FAIL(diag, TROVE_ERR_INVALID, i,
                              "volume name \"%s\" has byte 0x%02x at byte %zu; a name may "
                              "contain only A-Z a-z 0-9 . _ -",
                              q, (unsigned)c, i);
    }
    return TROVE_OK;
}
