/*
 * s3_xml.c: the element scanner of s3_xml.h. A start tag is '<' + the name + one of '>',
 * '/', or whitespace (so <Key> never matches <KeyCount>); its text runs to the first '<',
 * which must open the matching end tag. Text may not contain elements (S3's leaf fields
 * never do). Entities: &lt; &gt; &amp; &quot; &apos; and &#N; / &#xH; for N < 128 (S3
 * escapes only these in keys and tokens; anything else is refused, not guessed). A NUL byte
 * in a text is refused too: XML has none, and the caller's C string would end there.
 *
 * Every index is checked against len before the byte is read; out is written only below
 * cap - 1 and always NUL-terminated when cap > 0.
 */
#include "s3_xml.h"

#include "trove/common.h"

#include <string.h>

static int starts(const char *p, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(p, lit, k) == 0;
}

/* One entity at xml[i, len) (xml[i] == '&'): its character in *c and its length. */
static int entity(const char *xml, size_t len, size_t i, char *c, size_t *n_out)
{
    static const struct { const char *name; char c; } named[] = {
        {"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
    size_t k;
    unsigned v = 0;
    int hex, digits = 0;

    for (k = 0; k < sizeof named / sizeof named[0]; k++) {
        if (starts(xml + i, len - i, named[k].name)) {
            *c = named[k].c;
            *n_out = strlen(named[k].name);
            return TROVE_OK;
        }
    }
    if (!starts(xml + i, len - i, "&#"))
        return TROVE_ERR_CORRUPT;
    k = i + 2;
    hex = k < len && (xml[k] == 'x' || xml[k] == 'X');
    k += (size_t)hex;
    for (; k < len && xml[k] != ';' && digits < 4; k++, digits++) {
        char ch = xml[k];
        unsigned d;
        if (ch >= '0' && ch <= '9')
            d = (unsigned)(ch - '0');
        else if (hex && ch >= 'a' && ch <= 'f')
            d = (unsigned)(ch - 'a' + 10);
        else if (hex && ch >= 'A' && ch <= 'F')
            d = (unsigned)(ch - 'A' + 10);
        else
            return TROVE_ERR_CORRUPT;
        v = v * (hex ? 16u : 10u) + d;
    }
    if (digits == 0 || k >= len || xml[k] != ';' || v == 0 || v >= 128)
        return TROVE_ERR_CORRUPT;
    *c = (char)v;
    *n_out = k + 1 - i;
    return TROVE_OK;
}

int trove__s3_xml_next(const char *xml, size_t len, size_t *pos, const char *tag, char *out,
                       size_t cap)
{
    size_t tlen = strlen(tag), i = *pos, o = 0;

    if (cap > 0)
        out[0] = '\0';
    for (; i < len; i++) {
        size_t after;
        if (xml[i] != '<' || len - i < tlen + 2 || memcmp(xml + i + 1, tag, tlen) != 0)
            continue;
        after = i + 1 + tlen;
        if (xml[after] != '>' && xml[after] != '/' && xml[after] != ' ' && xml[after] != '\t' &&
            xml[after] != '\r' && xml[after] != '\n')
            continue;
        /* The end of the start tag (attribute values here never hold '>'). */
        while (after < len && xml[after] != '>')
            after++;
        if (after >= len)
            return 0;
        if (xml[after - 1] == '/') { /* <tag/>: empty */
            *pos = after + 1;
            return 1;
        }
        i = after + 1;
        *pos = i;
        while (i < len && xml[i] != '<') {
            char c = xml[i];
            size_t n = 1;
            if ((c == '&' && entity(xml, len, i, &c, &n) != TROVE_OK) ||
                (c == '\0')) { /* XML has no NUL; a text with one would be cut short */
                if (cap > 0)
                    out[0] = '\0';
                return TROVE_ERR_CORRUPT;
            }
            if (o + 1 >= cap) {
                if (cap > 0)
                    out[0] = '\0';
                return TROVE_ERR_LIMIT;
            }
            out[o++] = c;
            i += n;
        }
        if (i >= len)
            break; /* never ends */
        if (len - i < tlen + 3 || xml[i + 1] != '/' || memcmp(xml + i + 2, tag, tlen) != 0 ||
            xml[i + 2 + tlen] != '>') {
            if (cap > 0)
                out[0] = '\0';
            return TROVE_ERR_CORRUPT;
        }
        if (cap > 0)
            out[o] = '\0';
        *pos = i + tlen + 3;
        return 1;
    }
    if (cap > 0)
        out[0] = '\0';
    return 0;
}
