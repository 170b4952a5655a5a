/*
 * refs.h (internal): the store's reference-count file DIR/refs, format v1.
 *
 * DIR/refs persists the committed half of the store's reference counts (include/trove/
 * volume.h): for every digest that some committed recipe names, how many slots name it and
 * its stable dictionary index. It also records the basis, i.e. which recipe states the counts were
 * taken from (each volume's name, generation and recipe checksum), so that open can tell a
 * refs file a crash left behind the recipes and recount. This header is the codec only; the
 * store (src/store/store.c) builds the records, writes the file atomically and loads it.
 *
 *   offset  0  magic          "TROVREFS" (8 bytes)
 *           8  version        u32 = 1
 *          12  flags          u32 = 0
 *          16  volume_count   u64 (V <= TROVE__REFS_MAX_VOLUMES)
 *          24  entry_count    u64 (E <= TROVE__REFS_MAX_ENTRIES)
 *          32  dict_size      u32 (every dict_index < dict_size)
 *          36  reserved       u32 = 0
 *          40  basis          V x 144 bytes: name[128] NUL-padded, generation u64, checksum u64
 *   40 + 144V  entries        E x 32 bytes: digest[16], committed u64, dict_index u32,
 *                             reserved u32 = 0
 *   40 + 144V + 32E  checksum u64, xxh3-64 over every byte before it
 *
 * Little-endian; exactly 48 + 144V + 32E bytes. src/store/refs.c has the byte diagram and
 * the validation rules; docs/formats/store.md documents the format with a golden vector.
 *
 * Thread-safety: the functions keep no state; concurrent calls on different outputs are safe.
 */
#ifndef TROVE_STORE_REFS_H
#define TROVE_STORE_REFS_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"
#include "trove/store.h"
#include "trove/volume.h"

#define TROVE__REFS_HEADER 40
#define TROVE__REFS_BASIS_BYTES 144
#define TROVE__REFS_ENTRY_BYTES 32
#define TROVE__REFS_MAX_VOLUMES (1u << 20)
#define TROVE__REFS_MAX_ENTRIES (1ull << 32)

/* A recipe the counts were taken from. */
struct trove__refs_basis {
    char name[TROVE_VOLUME_NAME_MAX + 1]; /* NUL-terminated */
    uint64_t generation;                  /* the recipe's generation field */
    uint64_t checksum;                    /* the recipe's trailing xxh3-64 entry checksum */
};

/* One digest's committed count. */
struct trove__refs_entry {
    struct trove_digest d; /* never zero */
    uint64_t committed;    /* >= 1: slots of committed recipes naming d */
    uint32_t dict_index;   /* < dict_size */
};

/*
 * Append the encoding to out (out unchanged on error). basis must be sorted by name strictly
 * increasing (strcmp order) with valid names (trove_volume_name_check); entries in any
 * order, digests nonzero, committed >= 1, dict_index < dict_size. basis and entries may be
 * NULL when their count is 0. Uniqueness of digests and dict indices is the caller's
 * invariant and is not checked (nor is it by the decoder).
 * Errors: TROVE_ERR_INVALID (out NULL, an array NULL with a nonzero count, a record breaking
 * a rule above), TROVE_ERR_LIMIT (nbasis > TROVE__REFS_MAX_VOLUMES or nentries >
 * TROVE__REFS_MAX_ENTRIES; checked before any record is read), TROVE_ERR_NOMEM.
 */
int trove__refs_encode(const struct trove__refs_basis *basis, size_t nbasis,
                       const struct trove__refs_entry *entries, size_t nentries,
                       uint32_t dict_size, struct trove_bytes *out);

/* A decoded refs file. The pointers borrow from the decoded buffer and are valid while it is. */
struct trove__refs_view {
    uint64_t volume_count, entry_count;
    uint32_t dict_size;
    const uint8_t *basis;   /* volume_count x 144 bytes */
    const uint8_t *entries; /* entry_count x 32 bytes */
};

/*
 * Validate buf[0..len) completely (header, length, checksum, then every record); on success
 * fill out (pointers into buf). Errors, each with the byte offset and a message in diag (may
 * be NULL): TROVE_ERR_INVALID (out NULL, or buf NULL with len > 0), TROVE_ERR_TRUNCATED,
 * TROVE_ERR_MAGIC, TROVE_ERR_VERSION (a newer version says so), TROVE_ERR_CORRUPT,
 * TROVE_ERR_LIMIT, TROVE_ERR_CHECKSUM. Never reads past buf; out untouched on failure.
 * Duplicate digests or dict indices are not detected here: the loader finds them as it
 * inserts the entries into its hash table.
 */
int trove__refs_decode(const uint8_t *buf, size_t len, struct trove__refs_view *out,
                       struct trove_diag *diag);

/* Basis record i (< v->volume_count) of a decoded file, its name NUL-terminated. */
void trove__refs_basis_at(const struct trove__refs_view *v, uint64_t i,
                          struct trove__refs_basis *out);
/* Entry i (< v->entry_count) of a decoded file. */
void trove__refs_entry_at(const struct trove__refs_view *v, uint64_t i,
                          struct trove__refs_entry *out);

#endif
