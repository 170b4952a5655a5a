/*
 * sealed.c: magic, version gate and trailing checksum of sealed objects (common/sealed.h),
 * so that every on-disk format refuses damage with the same words and offsets.
 */
#include "common/sealed.h"

#include <inttypes.h>
#include <string.h>

#include "common/endian.h"
#include "trove/digest.h"

int trove__sealed_magic_at(const uint8_t *buf, size_t len, const char *magic, size_t n,
                           uint64_t at, const char *what, struct trove_diag *diag)
{
    if (len < n)
        return trove_diag_set(diag, TROVE_ERR_TRUNCATED, at + len,
                              "%s is %zu bytes, shorter than its magic; the file was cut short",
                              what, len);
    if (memcmp(buf, magic, n) != 0)
        return trove_diag_set(diag, TROVE_ERR_MAGIC, at,
                              "not a trove %s (it does not start with \"%.*s\")", what, (int)n,
                              magic);
    return TROVE_OK;
}

int trove__sealed_magic(const uint8_t *buf, size_t len, const char magic[8], const char *what,
                        struct trove_diag *diag)
{
    return trove__sealed_magic_at(buf, len, magic, 8, 0, what, diag);
}

int trove__sealed_version(uint32_t version, uint64_t off, const uint32_t *known, size_t n,
                          const char *what, const char *reads, struct trove_diag *diag)
{
    for (size_t i = 0; i < n; i++)
        if (known[i] == version)
            return TROVE_OK;
    if (n && version > known[n - 1])
        return trove_diag_set(diag, TROVE_ERR_VERSION, off,
                              "%s version %" PRIu32 " was written by a newer trove; this build "
                              "reads %s — upgrade trove to read it",
                              what, version, reads);
    return trove_diag_set(diag, TROVE_ERR_VERSION, off,
                          "%s version %" PRIu32 " is unknown (not a trove %s version); this build "
                          "reads %s",
                          what, version, what, reads);
}

int trove__sealed_trailer_at(const uint8_t *buf, size_t len, uint64_t at, const char *what,
                             struct trove_diag *diag)
{
    uint64_t stored, actual;

    if (len < TROVE__SEALED_TRAILER)
        return trove_diag_set(diag, TROVE_ERR_TRUNCATED, at + len,
                              "%s is %zu bytes, too short for its checksum", what, len);
    stored = trove__get_le64(buf + len - TROVE__SEALED_TRAILER);
    actual = trove_checksum64(buf, len - TROVE__SEALED_TRAILER);
    if (stored != actual)
        return trove_diag_set(diag, TROVE_ERR_CHECKSUM, at + len - TROVE__SEALED_TRAILER,
                              "%s checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64
                              "); the file is damaged",
                              what, stored, actual);
    return TROVE_OK;
}

int trove__sealed_trailer(const uint8_t *buf, size_t len, const char *what,
                          struct trove_diag *diag)
{
    return trove__sealed_trailer_at(buf, len, 0, what, diag);
}

void trove__sealed_seal(uint8_t *buf, size_t len)
{
    trove__put_le64(buf + len - TROVE__SEALED_TRAILER,
                    trove_checksum64(buf, len - TROVE__SEALED_TRAILER));
}
