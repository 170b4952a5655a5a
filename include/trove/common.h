/*
 * trove/common.h: errors, diagnostics, the growable byte buffer and the output sink shared
 * by every layer.
 *
 * Every trove function that can fail returns an int: TROVE_OK (0) on success, a library
 * error in the reserved band [-1999, -1000], or a system error as -errno. trove_strerror()
 * names both. Decoders and importers also fill an optional struct trove_diag with the byte
 * offset at which they stopped and a one-line message for a user, so that a CLI can say
 * what failed, where, and what to do.
 */
#ifndef TROVE_COMMON_H
#define TROVE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum trove_error {
    TROVE_OK = 0,
    TROVE_ERR_BASE = -1000,
    TROVE_ERR_INVALID = -1001,     /* a caller passed an argument outside its contract */
    TROVE_ERR_NOMEM = -1002,       /* an allocation failed */
    TROVE_ERR_TRUNCATED = -1003,   /* input ends inside a frame, header or record */
    TROVE_ERR_OVERRUN = -1004,     /* a length or count inside a payload points past its end */
    TROVE_ERR_VARINT = -1005,      /* a varint longer than 10 bytes or wider than its field */
    TROVE_ERR_THREAD = -1006,      /* a thread index past the batch's thread table */
    TROVE_ERR_LIMIT = -1007,       /* a count or size over a hard limit */
    TROVE_ERR_BOMB = -1008,        /* compressed data declares or inflates past its limit */
    TROVE_ERR_MAGIC = -1009,       /* not a trove frame */
    TROVE_ERR_VERSION = -1010,     /* a frame version this build does not read */
    TROVE_ERR_FORMAT = -1011,      /* an unknown frame format id */
    TROVE_ERR_CORRUPT = -1012,     /* bytes that violate the format in another way */
    TROVE_ERR_INFLATE = -1013,     /* the deflate stream itself is malformed */
    TROVE_ERR_JSON = -1014,        /* malformed JSON */
    TROVE_ERR_UNMATCHED = -1015,   /* a B without its E, or an E without its B */
    TROVE_ERR_NEGATIVE = -1016,    /* an end before its start, or a negative time */
    TROVE_ERR_TRACE = -1017,       /* well-formed JSON that is not a valid trace event */
    TROVE_ERR_MISMATCH = -1018,    /* a round trip or comparison found different data */
    TROVE_ERR_NOTFOUND = -1019,    /* no such object, volume or name */
    TROVE_ERR_CHECKSUM = -1020,    /* stored bytes do not match their checksum */
    TROVE_ERR_EXISTS = -1021,      /* a volume or name that must be new already exists */
    TROVE_ERR_READONLY = -1022,    /* a write to a snapshot or a store opened read-only */
    TROVE_ERR_BUSY = -1023,        /* the volume is open, or the store is locked elsewhere */
    TROVE_ERR_CANCELLED = -1024,   /* the request was cancelled */
    TROVE_ERR_SEND = -1025,        /* a sink failed to send (the first failure is sticky) */
    TROVE_ERR_TIMEOUT = -1026,     /* a wait ended before the work did */
    TROVE_ERR_REMOTE = -1027,      /* a remote store refused a request or could not be reached */
    TROVE_ERR_LAST = -1028
};

/* A short, static, human-readable name for an error code (library or -errno). */
const char *trove_strerror(int err);

/*
 * Where and why a decoder or importer stopped. Functions that take a `struct trove_diag *`
 * accept NULL. On failure they set code, the byte offset into their input, and msg.
 */
struct trove_diag {
    int code;
    uint64_t offset;
    char msg[1024]; /* room for a path, the kind it was read as, where, and what to try */
};

/* Record an error in diag (which may be NULL) and return `code`; msg is printf-style. */
int trove_diag_set(struct trove_diag *diag, int code, uint64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/*
 * A growable byte buffer. Owns ptr (free with trove_bytes_free). A zeroed struct is an
 * empty buffer. Functions that append grow it; on failure the content is unchanged.
 */
struct trove_bytes {
    uint8_t *ptr;
    size_t len;
    size_t cap;
};

/* Make room for `extra` more bytes past len. Returns TROVE_OK or TROVE_ERR_NOMEM. */
int trove_bytes_reserve(struct trove_bytes *b, size_t extra);
/* Append n bytes. Returns TROVE_OK or TROVE_ERR_NOMEM. */
int trove_bytes_append(struct trove_bytes *b, const void *src, size_t n);
/* Release the storage and zero the struct. */
void trove_bytes_free(struct trove_bytes *b);

/*
 * Where a streaming writer puts its bytes as it makes them: a file, a pipe, another writer.
 * write(ctx, p, n) takes all of p[0..n) (n > 0; p valid only for the call) or returns an
 * error, a TROVE_ERR_* or -errno, which the writer returns and keeps (a writer whose sink
 * failed takes no more work). A writer calls its sink from the thread that calls it, one
 * call at a time.
 */
struct trove_sink {
    int (*write)(void *ctx, const void *p, size_t n);
    void *ctx;
};

/* A sink write function appending to the struct trove_bytes ctx (TROVE_ERR_NOMEM when it
 * cannot grow): for tests, and for writers whose output is small enough to keep. */
int trove_bytes_sink_write(void *ctx, const void *p, size_t n);

/* Version string of this build, e.g. "0.1.0". */
const char *trove_version(void);

#ifdef __cplusplus
}
#endif
#endif
