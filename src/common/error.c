/*
 * error.c: names for trove's error codes and the diagnostics helper.
 *
 * Library errors live in the reserved band [-1999, -1000] so they can never collide with
 * -errno values passed through from the system; trove_strerror() covers both.
 */
#include "trove/common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef TROVE_VERSION
#define TROVE_VERSION "0.0.0"
#endif

const char *trove_version(void) { return TROVE_VERSION; }

const char *trove_strerror(int err)
{
    switch (err) {
    case TROVE_OK: return "success";
    case TROVE_ERR_INVALID: return "invalid argument";
    case TROVE_ERR_NOMEM: return "out of memory";
    case TROVE_ERR_TRUNCATED: return "truncated input";
    case TROVE_ERR_OVERRUN: return "length past the end of the data";
    case TROVE_ERR_VARINT: return "malformed varint";
    case TROVE_ERR_THREAD: return "thread index past the thread table";
    case TROVE_ERR_LIMIT: return "count or size over the limit";
    case TROVE_ERR_BOMB: return "compressed data exceeds its size limit";
    case TROVE_ERR_MAGIC: return "not a trove frame (bad magic)";
    case TROVE_ERR_VERSION: return "unsupported format version";
    case TROVE_ERR_FORMAT: return "unknown frame format";
    case TROVE_ERR_CORRUPT: return "corrupt data";
    case TROVE_ERR_INFLATE: return "malformed deflate stream";
    case TROVE_ERR_JSON: return "malformed JSON";
    case TROVE_ERR_UNMATCHED: return "unmatched begin/end event";
    case TROVE_ERR_NEGATIVE: return "end before start or negative time";
    case TROVE_ERR_TRACE: return "invalid trace event";
    case TROVE_ERR_MISMATCH: return "data mismatch";
    case TROVE_ERR_NOTFOUND: return "not found";
    case TROVE_ERR_CHECKSUM: return "checksum mismatch";
    case TROVE_ERR_EXISTS: return "already exists";
    case TROVE_ERR_READONLY: return "read-only";
    case TROVE_ERR_BUSY: return "in use";
    case TROVE_ERR_CANCELLED: return "cancelled";
    case TROVE_ERR_SEND: return "send failed";
    case TROVE_ERR_TIMEOUT: return "timed out";
    case TROVE_ERR_REMOTE: return "remote store error";
    default: break;
    }
    if (err < 0 && err > -1000)
        return strerror(-err);
    return "unknown error";
}

int trove_diag_set(struct trove_diag *diag, int code, uint64_t offset, const char *fmt, ...)
{
    if (diag) {
        va_list ap;
        diag->code = code;
        diag->offset = offset;
        va_start(ap, fmt);
        vsnprintf(diag->msg, sizeof diag->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}
