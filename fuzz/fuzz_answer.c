/*
 * fuzz_answer.c: libFuzzer target for what a producer reads from `trove serve`: the answer
 * lines (docs/serve.md, "Producers"), as `trove record` parses them
 * (trove_serve_answer_parse, src/net/producer.c) and as libtrove-client scans them for
 * their type (trove__client_answer_type, src/client/client_wire.c). The input is one line
 * without its newline, in a heap copy of exactly its size so that ASan sees a read past it.
 * Oracles: the client's scan never reads a type the parser did not (it may read none: it
 * does not decode escapes); a line the parser takes is written again by the service's own
 * writers (trove__answer_accept, trove__answer_reason, trove__answer_stopping) within
 * TROVE_SERVE_ANSWER_MAX bytes, and that line parses to the same answer ("stopping" too; a
 * reason the writer had to cut: to its start).
 * (The accept's writer does not escape the capture: the parser takes valid names only.)
 */
#include <stdlib.h>
#include <string.h>

#include "client/client_wire.h"
#include "fuzz_check.h"
#include "net/producer.h"
#include "trove/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_serve_answer a, b;
    char line[TROVE_SERVE_ANSWER_MAX];
    char *copy = malloc(size ? size : 1);
    size_t n;
    int rc, type;

    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    rc = trove_serve_answer_parse(copy, size, &a, NULL);
    type = trove__client_answer_type(copy, size);
    free(copy);
    if (rc != TROVE_OK)
        return 0;
    CHECK(a.type >= TROVE_SERVE_ACCEPT && a.type <= TROVE_SERVE_ERROR);
    CHECK(type == 0 || type == a.type);
    if (a.type == TROVE_SERVE_ACCEPT) {
        CHECK(a.mode >= TROVE_SERVE_NEW && a.mode <= TROVE_SERVE_JOIN);
        n = trove__answer_accept(line, a.capture, a.session, a.mode, a.events);
    } else if (a.stopping) {
        n = trove__answer_stopping(line, a.type, a.reason);
    } else {
        n = trove__answer_reason(line, a.type, a.reason);
    }
    CHECK(n > 0 && n < TROVE_SERVE_ANSWER_MAX && line[n - 1] == '\n');
    CHECK(memchr(line, '\n', n - 1) == NULL);
    CHECK(trove__client_answer_type(line, n - 1) == a.type);
    CHECK(trove_serve_answer_parse(line, n - 1, &b, NULL) == TROVE_OK);
    CHECK(b.type == a.type);
    CHECK(b.stopping == a.stopping);
    if (a.type == TROVE_SERVE_ACCEPT) {
        CHECK(b.mode == a.mode && b.session == a.session && b.events == a.events &&
              strcmp(b.capture, a.capture) == 0);
    } else {
        size_t bl = strlen(b.reason);
        int cut = bl >= 3 && memcmp(b.reason + bl - 3, "...", 3) == 0 &&
                  strncmp(b.reason, a.reason, bl - 3) == 0;
        CHECK(strcmp(b.reason, a.reason) == 0 || cut);
    }
    return 0;
}
