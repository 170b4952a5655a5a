/*
 * fail.h (internal): trove's one error idiom. A function that fails records why and returns
 * the code in one statement:
 *
 *     if (len < 16)
 *         return TROVE_FAIL(diag, TROVE_ERR_TRUNCATED, len, "header is %zu bytes", len);
 *
 * and one that has something to clean up sets rc and jumps to its one cleanup label:
 *
 *     if (!buf) { rc = TROVE_ERR_NOMEM; goto out; }
 *     TROVE_TRY(rc, step(...));     -- rc = step(...); on error goto out
 *   out:
 *     free(buf);
 *     return rc;
 *
 * A function with nothing to clean up returns directly and has no label.
 */
#ifndef TROVE_COMMON_FAIL_H
#define TROVE_COMMON_FAIL_H

#include "trove/common.h"

/* Fill diag (may be NULL) with code, offset and a printf-style message; evaluates to code. */
#define TROVE_FAIL(diag, code, offset, ...) trove_diag_set((diag), (code), (offset), __VA_ARGS__)

/* rc = (expr); if it is an error, jump to the function's cleanup label `out`. */
#define TROVE_TRY(rc, expr)                                                                   \
    do {                                                                                      \
        if (((rc) = (expr)) < 0)                                                              \
            goto out;                                                                         \
    } while (0)

#endif
