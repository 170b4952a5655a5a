/*
 * trove/bundle.h: the capture bundle, a zip archive holding a capture's Parquet tables
 * (events.parquet, names.parquet, threads.parquet, samples.parquet, frames.parquet,
 * flows.parquet, and sort_indexes.parquet when the capture has sort indexes) and
 * manifest.json, which says what the bundle is and what it holds.
 *
 * The container is plain zip (libzip; written also by trove's own streaming writer, to the
 * same bytes), so any unzip tool or DuckDB user can open it, with only STORED and DEFLATED
 * entries. trove writes it deterministically: the same entries in
 * the same order give the same bytes (every entry dated 1980-01-01 00:00:00, the DOS
 * epoch, in any time zone; fixed attributes; no comments). Entry names follow one rule,
 * checked on write and, for every entry, on open (trove_bundle_name_check); a zip that
 * breaks it anywhere is refused as a whole, before anything is read from it.
 *
 * A bundle handle is not thread-safe: use one per thread, or lock around it.
 */
#ifndef TROVE_BUNDLE_H
#define TROVE_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TROVE_BUNDLE_MAX_ENTRIES 1024u            /* entries in a bundle */
#define TROVE_BUNDLE_MAX_NAME 255u                /* bytes of an entry name */
#define TROVE_BUNDLE_MAX_TOTAL (16ull << 30)      /* declared uncompressed bytes, all entries */
#define TROVE_BUNDLE_MAX_MANIFEST (1u << 20)      /* bytes of manifest.json */
/* A DEFLATED entry over TROVE_BUNDLE_RATIO_FREE bytes may expand its compressed size at most
 * TROVE_BUNDLE_MAX_RATIO times (trove's own Parquet entries stay under 4:1; a zip bomb's
 * are near deflate's 1032:1): more is refused before a byte is allocated. */
#define TROVE_BUNDLE_MAX_RATIO 100u
#define TROVE_BUNDLE_RATIO_FREE (16u << 20)
#define TROVE_BUNDLE_FORMAT_VERSION 1u            /* the manifest's format_version */
#define TROVE_BUNDLE_MANIFEST_NAME "manifest.json"

/* One entry to write: name (NUL-terminated, see trove_bundle_name_check) and its bytes. */
struct trove_bundle_entry {
    const char *name;
    const uint8_t *data; /* may be NULL when len is 0 */
    size_t len;
};

/*
 * Check one entry name: 1 .. TROVE_BUNDLE_MAX_NAME bytes of valid UTF-8; relative ('/'
 * separates components, none of them empty, "." or ".."; so no leading or trailing '/');
 * no '\\', no ':' (a drive letter), no control character, no DEL and no space (libzip
 * reads a NUL byte in a stored name as a space, so refusing the space is how a stored NUL
 * is refused). Returns TROVE_OK or TROVE_ERR_INVALID; *why_out (if not NULL) is then a
 * static phrase saying which rule failed.
 */
int trove_bundle_name_check(const char *name, size_t len, const char **why_out);

/*
 * Write the n entries, in order, as the bundle at path: into path.tmp (same directory,
 * replaced if present), fsync'd, renamed over path, and the directory fsync'd. Entries are
 * STORED, or DEFLATED (zlib level 6) when deflate is non-zero. The entry data are
 * not copied and must stay valid for the call.
 *
 * Errors: TROVE_ERR_INVALID (n of 0 or over TROVE_BUNDLE_MAX_ENTRIES, a name that breaks
 * the rule or repeats, a NULL data with a length), TROVE_ERR_LIMIT (total over
 * TROVE_BUNDLE_MAX_TOTAL), TROVE_ERR_NOMEM, -errno or TROVE_ERR_CORRUPT for what libzip
 * reports; diag (may be NULL) says which entry or step. On error path is untouched (an
 * earlier file there stays as it was) and path.tmp is removed; the one exception is a
 * failed fsync of the directory after the rename, reported as -errno with path already
 * holding the complete new bundle (not yet known to be durable).
 */
int trove_bundle_write(const char *path, const struct trove_bundle_entry *e, size_t n,
                       int deflate, struct trove_diag *diag);

/* The same bundle, appended to out in memory (for an output that is not a regular file, or
 * that the caller writes itself). Errors as trove_bundle_write without the file ones; out
 * is unchanged on error. */
int trove_bundle_write_mem(const struct trove_bundle_entry *e, size_t n, int deflate,
                           struct trove_bytes *out, struct trove_diag *diag);

/*
 * The bundle written front to back, never seeking, to a sink (a pipe, a socket, a file
 * opened for appending), in the bytes trove_bundle_write_mem makes of the same entries in
 * the same order, so that an export can stream a bundle whose events table it never holds
 * whole. Zip64 records appear where libzip writes them: an entry of 4 GiB or more, or one
 * that starts past 4 GiB; the entries total at most TROVE_BUNDLE_MAX_TOTAL, as
 * trove_bundle_write's.
 *
 * A zip's local header holds the entry's CRC-32 and sizes before its bytes, so an entry
 * too large to hold is first passed through an encoder (trove_bundle_enc_*), which gives
 * them and the entry's stored form (the bytes themselves, or the deflate stream of a
 * deflated bundle: zlib level 6, as libzip makes it) to its sink, which keeps them (a
 * temporary file, say); then trove_bundle_writer_begin writes the header, and
 * trove_bundle_writer_data the stored bytes as they are read back. A small entry in memory
 * is one trove_bundle_writer_add.
 *
 * Objects are for one thread at a time. Each keeps its first error (sticky): after one, or
 * after finish, every call returns it (finish: TROVE_ERR_INVALID), and only free is left;
 * what the sink got by then is not a zip.
 */

/* What the writer needs of an entry before its bytes: from trove_bundle_enc_finish. */
struct trove_bundle_entry_info {
    uint32_t crc32;       /* of the entry's bytes */
    uint64_t size;        /* the entry's bytes */
    uint64_t stored_size; /* the bytes the zip holds: size when stored, else the deflate
                           * stream's */
    int deflated;         /* stored_size counts a deflate stream */
};

/* An entry encoder (opaque). */
struct trove_bundle_enc;

/*
 * trove_bundle_enc_new: an encoder for one entry of a bundle that is deflated (deflate
 * non-zero) or stored; out (copied) gets the stored form. trove_bundle_enc_write takes the
 * entry's next n bytes (any n; deflate gets them 8 KiB at a time); trove_bundle_enc_sink
 * fills *out with a sink that writes to e (for a writer that sends its output to a sink,
 * such as the events table's). trove_bundle_enc_finish ends the deflate stream and fills
 * *info. Errors: TROVE_ERR_INVALID (NULL arguments; a call after finish), TROVE_ERR_NOMEM,
 * the sink's.
 */
int trove_bundle_enc_new(int deflate, const struct trove_sink *out, struct trove_bundle_enc **e_out);
int trove_bundle_enc_write(struct trove_bundle_enc *e, const void *p, size_t n);
void trove_bundle_enc_sink(struct trove_bundle_enc *e, struct trove_sink *out);
int trove_bundle_enc_finish(struct trove_bundle_enc *e, struct trove_bundle_entry_info *info);
void trove_bundle_enc_free(struct trove_bundle_enc *e);

/* A streaming bundle writer (opaque). */
struct trove_bundle_writer;

/* A writer of a bundle whose entries are all deflated (deflate non-zero) or all stored,
 * to out (copied). Errors: TROVE_ERR_INVALID, TROVE_ERR_NOMEM. */
int trove_bundle_writer_new(int deflate, const struct trove_sink *out,
                            struct trove_bundle_writer **w_out);
/*
 * The next entry, from memory: CRC-32 and (deflated) compressed here, then its header and
 * bytes written. e->data is not kept. Errors, with diag naming the entry: TROVE_ERR_INVALID
 * (the previous entry's stored bytes not all given; over TROVE_BUNDLE_MAX_ENTRIES entries; a
 * name that breaks the rule of trove_bundle_name_check or repeats; NULL data with a length),
 * TROVE_ERR_LIMIT (the entries would total more than TROVE_BUNDLE_MAX_TOTAL bytes),
 * TROVE_ERR_NOMEM, the sink's.
 */
int trove_bundle_writer_add(struct trove_bundle_writer *w, const struct trove_bundle_entry *e,
                            struct trove_diag *diag);
/* The next entry, encoded beforehand (info from trove_bundle_enc_finish, of an encoder of
 * this writer's kind): its header now, then exactly info->stored_size bytes through
 * trove_bundle_writer_data before the next entry or finish. Errors as for _add, and
 * TROVE_ERR_INVALID for an info of the other kind. */
int trove_bundle_writer_begin(struct trove_bundle_writer *w, const char *name,
                              const struct trove_bundle_entry_info *info, struct trove_diag *diag);
/* The open entry's next n stored bytes. Errors: TROVE_ERR_INVALID (more than its stored
 * size), the sink's. */
int trove_bundle_writer_data(struct trove_bundle_writer *w, const void *p, size_t n);
/* The central directory and end records: the bundle is complete. Errors: TROVE_ERR_INVALID
 * (no entry; the last one's stored bytes not all given), the sink's. */
int trove_bundle_writer_finish(struct trove_bundle_writer *w, struct trove_diag *diag);
/* Bytes given to the sink so far (after finish, the bundle's size). */
uint64_t trove_bundle_writer_bytes(const struct trove_bundle_writer *w);
void trove_bundle_writer_free(struct trove_bundle_writer *w);

/* An open bundle (opaque). */
struct trove_bundle;

/*
 * Open the bundle at path, or in buf[0..len) (which must stay valid and unchanged until
 * trove_bundle_close), and check its directory: libzip's consistency checks (each local
 * header against the central directory), at most TROVE_BUNDLE_MAX_ENTRIES entries, every
 * name by the rule above and unique, and the declared sizes summing to at most
 * TROVE_BUNDLE_MAX_TOTAL. Nothing is decompressed yet.
 *
 * What zip tools write when a user unzips a bundle and zips it again is accepted: a
 * directory entry ("x/": the rule holds for the name without its one trailing '/', and it
 * must hold no bytes) is listed but never found or read; and when manifest.json is not at
 * the top but exactly one FOLDER/manifest.json is, the bundle is that folder: find and
 * read take names relative to it ("events.parquet" is FOLDER/events.parquet). Two such
 * folders are TROVE_ERR_CORRUPT.
 *
 * Errors, with a message in diag: TROVE_ERR_MAGIC (not a zip), TROVE_ERR_CORRUPT (an
 * inconsistent or truncated archive, or a bad or repeated entry name, named in the
 * message), TROVE_ERR_LIMIT (too many entries or bytes), TROVE_ERR_NOMEM, -errno (path
 * cannot be opened or read). *out is set only on success.
 */
int trove_bundle_open_file(const char *path, struct trove_bundle **out, struct trove_diag *diag);
int trove_bundle_open_mem(const uint8_t *buf, size_t len, struct trove_bundle **out,
                          struct trove_diag *diag);

/* The number of entries, and entry i's name (i < count; valid until close), in archive
 * order: every entry as the zip names it, directories and any FOLDER/ too. */
size_t trove_bundle_count(const struct trove_bundle *b);
const char *trove_bundle_name(const struct trove_bundle *b, size_t i);

/* The bundle's folder: "" when manifest.json is at the top (or nowhere), else "FOLDER/".
 * Valid until close. */
const char *trove_bundle_folder(const struct trove_bundle *b);

/* The index of the file entry named name (relative to the bundle's folder, if any) in
 * *index_out (may be NULL). Returns TROVE_OK or TROVE_ERR_NOTFOUND. */
int trove_bundle_find(const struct trove_bundle *b, const char *name, size_t *index_out);

/*
 * Read the entry named name whole and append it to out. The entry's declared size is
 * checked before anything is allocated, and the data as they are read: never more than
 * the declared size, and the CRC-32 at the end.
 *
 * Errors, with the entry's name and the byte offset within the entry in diag:
 * TROVE_ERR_NOTFOUND; TROVE_ERR_FORMAT (a compression method other than STORED and
 * DEFLATED, or encryption); TROVE_ERR_LIMIT (declared size over max, or over SIZE_MAX);
 * TROVE_ERR_BOMB (a DEFLATED entry that declares more than deflate can expand its
 * compressed size to, or over TROVE_BUNDLE_RATIO_FREE bytes and more than
 * TROVE_BUNDLE_MAX_RATIO times it, or that inflates past its declared size); memory grows
 * with the bytes that really come (at most twice them, plus 1 MiB), not with what the
 * header declares; TROVE_ERR_CORRUPT (a
 * STORED entry whose two sizes differ, data that end early, other archive damage);
 * TROVE_ERR_INFLATE (a malformed deflate stream); TROVE_ERR_CHECKSUM (CRC-32 mismatch);
 * TROVE_ERR_NOMEM; -errno (read errors). On error out's content is unchanged.
 */
int trove_bundle_read(struct trove_bundle *b, const char *name, uint64_t max,
                      struct trove_bytes *out, struct trove_diag *diag);

/* Close the bundle (NULL is fine). */
void trove_bundle_close(struct trove_bundle *b);

/* manifest.json, decoded. Strings are NUL-terminated UTF-8. */
struct trove_bundle_manifest {
    uint32_t format_version;   /* TROVE_BUNDLE_FORMAT_VERSION */
    char capture[256];         /* the capture's name, free text */
    uint64_t start_ns, end_ns; /* the time range of its events, start <= end */
    uint64_t events, names, threads, samples, frames; /* rows of each table */
    uint64_t flows;            /* rows of the flows table (0: none, or no such table) */
    uint64_t sort_indexes;     /* rows of the sort_indexes table (0: none, no such table) */
    uint64_t stacks, switches; /* rows of the stacks and switches tables (0: none, no table) */
    uint64_t args;             /* rows of the args table (0: none, no table) */
    char tables[16][64];       /* the Parquet entries present, each a valid entry name */
    size_t ntables;
    char trove_version[32];    /* the trove that wrote it, e.g. "0.1.0" */
};

/*
 * Encode m as pretty-printed JSON (two-space indent, keys in the fixed order below, one
 * trailing newline) and append it to out:
 *
 *   {"format": "trove-bundle", "format_version": 1, "capture": "...",
 *    "time_range_ns": [start, end],
 *    "counts": {"events": N, "names": N, "threads": N, "samples": N, "frames": N
 *               [, "flows": N] [, "sort_indexes": N] [, "stacks": N] [, "switches": N]
 *               [, "args": N]},
 *    "tables": ["events.parquet", ...], "trove_version": "0.1.0"}
 *
 * "flows" is written only when m->flows is not 0, so a bundle without flows has the manifest
 * it had before flows existed; "sort_indexes", "stacks", "switches" and "args" likewise only
 * when they are not 0.
 * Integers are exact. Errors: TROVE_ERR_INVALID (format_version not
 * TROVE_BUNDLE_FORMAT_VERSION, a number of 2^63 or more, end_ns < start_ns, ntables over
 * 16, a string that is not NUL-terminated within its array or not UTF-8, a table name
 * that breaks the entry rule), TROVE_ERR_NOMEM. On error out is unchanged.
 */
int trove_bundle_manifest_encode(const struct trove_bundle_manifest *m, struct trove_bytes *out);

/*
 * Decode manifest.json from buf[0..len) into *m, strictly: a JSON object of at most
 * TROVE_BUNDLE_MAX_MANIFEST bytes, no duplicate keys, no NUL in strings; "format" is
 * "trove-bundle"; "format_version" is checked before any other key; every key above
 * present with its type (integers non-negative and exact, no reals), except counts.flows,
 * counts.sort_indexes, counts.stacks, counts.switches and counts.args, which may be absent
 * (0); unknown
 * keys ignored.
 *
 * Errors, with a message naming the key: TROVE_ERR_LIMIT (input over
 * TROVE_BUNDLE_MAX_MANIFEST, a string longer than its field, more than 16 tables),
 * TROVE_ERR_JSON (malformed JSON, with its offset; an integer of 2^63 or more),
 * TROVE_ERR_MAGIC ("format" missing or not "trove-bundle"), TROVE_ERR_VERSION
 * (format_version newer than this build reads), TROVE_ERR_CORRUPT (a key missing or of
 * the wrong type, a version of 0, a table name that breaks the entry rule),
 * TROVE_ERR_NEGATIVE (end before start), TROVE_ERR_NOMEM. On error *m is unchanged.
 */
int trove_bundle_manifest_decode(const uint8_t *buf, size_t len, struct trove_bundle_manifest *m,
                                 struct trove_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
