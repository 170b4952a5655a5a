/*
 * refs.c: the store's reference-count file DIR/refs, format v1 (src/store/refs.h,
 * docs/formats/store.md) — the committed reference counts and the recipe states they were
 * counted from.
 *
 *    0                   8         12        16                  24                  32
 *   +-------------------+---------+---------+-------------------+-------------------+
 *   | magic "TROVREFS"  | version | flags   | volume_count  u64 | entry_count   u64 |
 *   |                   | u32 = 1 | u32 = 0 | V                 | E                 |
 *   +-------------------+---------+---------+-------------------+-------------------+
 *   32        36        40
 *   +---------+---------+------------------------------------------- - -
 *   | dict    | reserved| basis[0] basis[1] ... basis[V-1]  (144 bytes each)
 *   | size u32| u32 = 0 |
 *   +---------+---------+------------------------------------------- - -
 *   40 + 144V                                   40 + 144V + 32E     48 + 144V + 32E
 *   +---------------------------------------- - +-------------------+
 *   | entry[0] entry[1] ... entry[E-1] (32 each) | checksum      u64 |  xxh3-64 of every
 *   +---------------------------------------- - +-------------------+  byte before it
 *
 *   basis record, 144 bytes                 entry, 32 bytes
 *   0            128          136      144  0            16            24         28       32
 *   +------------+------------+---------+   +------------+-------------+----------+--------+
 *   | name[128]  | generation | checksum|   | digest[16] | committed   | dict     | reserved|
 *   | NUL-padded | u64        | u64     |   | nonzero    | u64 >= 1    | index u32| u32 = 0 |
 *   +------------+------------+---------+   +------------+-------------+----------+--------+
 *
 *   Integers are little-endian. A basis record names one committed recipe the counts were
 *   taken from: the volume's name (a valid volume name, trove_volume_name_check; NUL bytes
 *   fill the rest of the field, and a 128-byte name fills it all), the recipe's generation
 *   and its trailing entry checksum. The records are sorted by name, strictly increasing.
 *   An entry is one digest named by V's recipes: how many of their slots name it
 *   (committed >= 1) and its stable dictionary index (dict_index < dict_size). Entries are
 *   in any order (the store writes its hash table's order). V <= 2^20, E <= 2^32; the file
 *   is exactly 48 + 144V + 32E bytes.
 *
 * Fixed-width records make a decode a header check, a length check, one checksum pass and
 * one pass over the records, with nothing copied: the view borrows the records from the
 * caller's buffer and basis_at / entry_at read record i in place. The checksum covers the
 * header too, since the counts and dict_size there are as vital as the records. The
 * decoder trusts nothing: both counts are bounded before they multiply, the expected length
 * is computed in 64 bits where it cannot overflow (48 + 144 * 2^20 + 32 * 2^32 < 2^38), and
 * only then are records read, so nothing past buf[len) is touched. Record rules are checked
 * after the checksum, so they catch files a buggy or hostile writer produced, not bit rot.
 * The decoder does NOT check that digests and dict indices are unique: that needs a hash
 * table, and the loader builds one from the entries anyway and refuses duplicates there.
 * Sorted names give each set of recipe states one basis encoding and let the loader merge
 * the basis against the sorted volume list. The encoder applies the same rules to its
 * arguments, so everything it writes decodes, and appends only after everything checked.
 */
#include "refs.h"

#include "common/endian.h"
#include "common/fail.h"
#include "common/sealed.h"

#include <assert.h>
#include <inttypes.h>
#include <string.h>

#define REFS_MAGIC "TROVREFS"
#define REFS_VERSION 1u
#define REFS_TRAILER TROVE__SEALED_TRAILER
#define REFS_NAME_BYTES TROVE_VOLUME_NAME_MAX

_Static_assert(sizeof REFS_MAGIC - 1 == 8, "the magic is 8 bytes");

static const uint32_t known_version = REFS_VERSION;
_Static_assert(sizeof(struct trove_digest) == 16, "a digest is 16 bytes");
_Static_assert(REFS_NAME_BYTES + 16 == TROVE__REFS_BASIS_BYTES, "name, generation, checksum");
_Static_assert(16 + 8 + 4 + 4 == TROVE__REFS_ENTRY_BYTES, "digest, committed, index, reserved");

/* The file's length; both counts are within their limits, so it fits in 38 bits. */
static uint64_t file_len(uint64_t volumes, uint64_t entries)
{
    assert(volumes <= TROVE__REFS_MAX_VOLUMES && entries <= TROVE__REFS_MAX_ENTRIES);
    return TROVE__REFS_HEADER + TROVE__REFS_BASIS_BYTES * volumes +
           TROVE__REFS_ENTRY_BYTES * entries + REFS_TRAILER;
}

/* Is this caller's basis record encodable: a NUL inside the array and a valid name? */
static int basis_name_ok(const struct trove__refs_basis *b)
{
    return memchr(b->name, '\0', sizeof b->name) != NULL &&
           trove_volume_name_check(b->name, NULL) == TROVE_OK;
}

static int entry_ok(const struct trove__refs_entry *e, uint32_t dict_size)
{
    return !trove_digest_is_zero(&e->d) && e->committed >= 1 && e->dict_index < dict_size;
}

int trove__refs_encode(const struct trove__refs_basis *basis, size_t nbasis,
                       const struct trove__refs_entry *entries, size_t nentries,
                       uint32_t dict_size, struct trove_bytes *out)
{
    uint64_t total;
    uint8_t *p;
    int rc;

    if (!out || (nbasis > 0 && !basis) || (nentries > 0 && !entries))
        return TROVE_ERR_INVALID;
    if ((uint64_t)nbasis > TROVE__REFS_MAX_VOLUMES ||
        (uint64_t)nentries > TROVE__REFS_MAX_ENTRIES)
        return TROVE_ERR_LIMIT;
    for (size_t i = 0; i < nbasis; i++) {
        if (!basis_name_ok(&basis[i]) || (i > 0 && strcmp(basis[i - 1].name, basis[i].name) >= 0))
            return TROVE_ERR_INVALID;
    }
    for (size_t i = 0; i < nentries; i++) {
        if (!entry_ok(&entries[i], dict_size))
            return TROVE_ERR_INVALID;
    }
    total = file_len(nbasis, nentries);
    if (total > SIZE_MAX - out->len)
        return TROVE_ERR_NOMEM; /* cannot be addressed on this host */
    rc = trove_bytes_reserve(out, (size_t)total);
    if (rc != TROVE_OK)
        return rc;

    p = out->ptr + out->len;
    memcpy(p, REFS_MAGIC, 8);
    trove__put_le32(p + 8, REFS_VERSION);
    trove__put_le32(p + 12, 0);
    trove__put_le64(p + 16, nbasis);
    trove__put_le64(p + 24, nentries);
    trove__put_le32(p + 32, dict_size);
    trove__put_le32(p + 36, 0);
    p += TROVE__REFS_HEADER;
    for (size_t i = 0; i < nbasis; i++, p += TROVE__REFS_BASIS_BYTES) {
        memset(p, 0, REFS_NAME_BYTES);
        memcpy(p, basis[i].name, strlen(basis[i].name));
        trove__put_le64(p + REFS_NAME_BYTES, basis[i].generation);
        trove__put_le64(p + REFS_NAME_BYTES + 8, basis[i].checksum);
    }
    for (size_t i = 0; i < nentries; i++, p += TROVE__REFS_ENTRY_BYTES) {
        memcpy(p, entries[i].d.b, 16);
        trove__put_le64(p + 16, entries[i].committed);
        trove__put_le32(p + 24, entries[i].dict_index);
        trove__put_le32(p + 28, 0);
    }
    trove__sealed_seal(out->ptr + out->len, (size_t)total);
    out->len += (size_t)total;
    return TROVE_OK;
}

/* Copy the name field of the basis record at rec into name (NUL-terminated); its length. */
static size_t field_name(const uint8_t *rec, char name[REFS_NAME_BYTES + 1])
{
    const uint8_t *nul = memchr(rec, 0, REFS_NAME_BYTES);
    size_t n = nul ? (size_t)(nul - rec) : REFS_NAME_BYTES;
    memcpy(name, rec, n);
    name[n] = '\0';
    return n;
}

/* Check basis record i at file offset `at`; prev is record i - 1's name (i > 0). */
static int check_basis(const uint8_t *rec, uint64_t i, uint64_t at, const char *prev,
                       char name[REFS_NAME_BYTES + 1], struct trove_diag *diag)
{
    struct trove_diag why;
    size_t n = field_name(rec, name);

    if (trove_volume_name_check(name, &why) != TROVE_OK)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "refs basis record %" PRIu64 " has a bad name: %s", i, why.msg);
    for (size_t k = n + 1; k < REFS_NAME_BYTES; k++) {
        if (rec[k] != 0)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                              "refs basis record %" PRIu64 " (\"%.40s\") has byte 0x%02x at "
                              "%zu of its name field, after the name's NUL; the padding "
                              "must be NUL",
                              i, name, (unsigned)rec[k], k);
    }
    if (i > 0 && strcmp(prev, name) >= 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "refs basis record %" PRIu64 " (\"%.40s\") %s record %" PRIu64
                          " (\"%.40s\"); names must be strictly increasing",
                          i, name, strcmp(prev, name) == 0 ? "repeats" : "sorts before",
                          i - 1, prev);
    return TROVE_OK;
}

/* Check entry i at file offset `at`. */
static int check_entry(const uint8_t *rec, uint64_t i, uint64_t at, uint32_t dict_size,
                       struct trove_diag *diag)
{
    struct trove_digest d;
    uint64_t committed = trove__get_le64(rec + 16);
    uint32_t dict_index = trove__get_le32(rec + 24), reserved = trove__get_le32(rec + 28);

    memcpy(d.b, rec, 16);
    if (trove_digest_is_zero(&d))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "refs entry %" PRIu64 " has the zero digest, which names no object",
                          i);
    if (committed == 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "refs entry %" PRIu64 " has a committed count of 0; an entry "
                          "exists only while some slot names its digest",
                          i);
    if (dict_index >= dict_size)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "refs entry %" PRIu64 " has dict index %" PRIu32 ", past the "
                          "dictionary size %" PRIu32,
                          i, dict_index, dict_size);
    if (reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, at,
                          "refs entry %" PRIu64 " reserved field is 0x%" PRIx32 ", must be 0",
                          i, reserved);
    return TROVE_OK;
}

int trove__refs_decode(const uint8_t *buf, size_t len, struct trove__refs_view *out,
                       struct trove_diag *diag)
{
    char names[2][REFS_NAME_BYTES + 1];
    uint32_t version, flags, dict_size, reserved;
    uint64_t volumes, entries, want, at;
    int rc;

    if (!out || (!buf && len > 0))
        return TROVE_FAIL(diag, TROVE_ERR_INVALID, 0,
                          "refs decode called without a buffer or an output");
    if (len < TROVE__REFS_HEADER + REFS_TRAILER)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "refs file is %zu bytes, shorter than its %u-byte header and "
                          "checksum; the file was cut short",
                          len, TROVE__REFS_HEADER + REFS_TRAILER);
    if ((rc = trove__sealed_magic(buf, len, REFS_MAGIC, "refs file", diag)) != TROVE_OK)
        return rc;
    version = trove__get_le32(buf + 8);
    rc = trove__sealed_version(version, 8, &known_version, 1, "refs", "version 1", diag);
    if (rc != TROVE_OK)
        return rc;
    flags = trove__get_le32(buf + 12);
    if (flags != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 12,
                          "refs flags are 0x%" PRIx32 "; version 1 defines none", flags);
    reserved = trove__get_le32(buf + 36);
    if (reserved != 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 36,
                          "refs reserved field is 0x%" PRIx32 ", must be 0", reserved);
    volumes = trove__get_le64(buf + 16);
    if (volumes > TROVE__REFS_MAX_VOLUMES)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 16,
                          "refs file lists %" PRIu64 " volumes, over the limit of %u",
                          volumes, TROVE__REFS_MAX_VOLUMES);
    entries = trove__get_le64(buf + 24);
    if (entries > TROVE__REFS_MAX_ENTRIES)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 24,
                          "refs file has %" PRIu64 " entries, over the limit of %llu",
                          entries, (unsigned long long)TROVE__REFS_MAX_ENTRIES);
    dict_size = trove__get_le32(buf + 32);
    want = file_len(volumes, entries);
    if ((uint64_t)len < want)
        return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len,
                          "refs file is %zu bytes but its %" PRIu64 " volumes and %" PRIu64
                          " entries need %" PRIu64 "; the file was cut short",
                          len, volumes, entries, want);
    if ((uint64_t)len > want)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, want,
                          "refs file is %zu bytes but its %" PRIu64 " volumes and %" PRIu64
                          " entries need %" PRIu64 "; %" PRIu64 " stray bytes follow the checksum",
                          len, volumes, entries, want, (uint64_t)len - want);
    if ((rc = trove__sealed_trailer(buf, len, "refs file", diag)) != TROVE_OK)
        return rc;

    at = TROVE__REFS_HEADER;
    for (uint64_t i = 0; i < volumes; i++, at += TROVE__REFS_BASIS_BYTES) {
        rc = check_basis(buf + at, i, at, names[(i + 1) & 1], names[i & 1], diag);
        if (rc != TROVE_OK)
            return rc;
    }
    for (uint64_t i = 0; i < entries; i++, at += TROVE__REFS_ENTRY_BYTES) {
        rc = check_entry(buf + at, i, at, dict_size, diag);
        if (rc != TROVE_OK)
            return rc;
    }
    assert(at == want - REFS_TRAILER);

    out->volume_count = volumes;
    out->entry_count = entries;
    out->dict_size = dict_size;
    out->basis = buf + TROVE__REFS_HEADER;
    out->entries = buf + TROVE__REFS_HEADER + TROVE__REFS_BASIS_BYTES * volumes;
    return TROVE_OK;
}

void trove__refs_basis_at(const struct trove__refs_view *v, uint64_t i,
                          struct trove__refs_basis *out)
{
    const uint8_t *p;
    assert(v && out && i < v->volume_count);
    p = v->basis + (size_t)i * TROVE__REFS_BASIS_BYTES;
    field_name(p, out->name);
    out->generation = trove__get_le64(p + REFS_NAME_BYTES);
    out->checksum = trove__get_le64(p + REFS_NAME_BYTES + 8);
}

void trove__refs_entry_at(const struct trove__refs_view *v, uint64_t i,
                          struct trove__refs_entry *out)
{
    const uint8_t *p;
    assert(v && out && i < v->entry_count);
    p = v->entries + (size_t)i * TROVE__REFS_ENTRY_BYTES;
    memcpy(out->d.b, p, 16);
    out->committed = trove__get_le64(p + 16);
    out->dict_index = trove__get_le32(p + 24);
}
