/* utf8.h (internal): strict UTF-8 validation (no overlongs, no surrogates, <= U+10FFFF). */
#ifndef TROVE_UTF8_H
#define TROVE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Returns the length of the valid prefix of s[0..len); equal to len when all is valid. */
size_t trove__utf8_valid_prefix(const uint8_t *s, size_t len);

#endif
