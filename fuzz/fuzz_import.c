/*
 * fuzz_import.c: libFuzzer target for the body of POST /api/captures/import as the service
 * stores it: the body written whole to a file (as web_api.c spools it into its temporary
 * file), then the service's importer, trove_import (src/input/import.c: the input layer on
 * the file — any kind trove reads, told from its bytes: Chrome JSON, Perfetto, a wire
 * stream, a bundle, Parquet, each gzip'd or zstd'd — then the capture written through the
 * store handle) into a store made once per process in a temporary directory
 * (fuzz_tmpdir.h), removed at exit.
 *
 * The first byte's bit 0 asks for an append onto a capture of three events written just
 * before; the rest is the body. Oracles: the import succeeds, or fails for the body
 * (bad_input) with a reason that names the upload as the service does ("body") and never
 * the file it was spooled to; never another failure (the store does not fail here; a
 * 404 or 409 cannot be the body's). After a success, the capture holds the events the input
 * layer reads from the same file (trove_input_load, run again), in order and equal field for field, after the three
 * of an append, with its names and flow rows; its header counts them. After a refusal the
 * store holds what it held: no capture, or the three events. The capture is then removed
 * (and the store collected every 1000 inputs), so every input starts from the same store.
 */
#define _GNU_SOURCE /* mkdtemp, nftw */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_check.h"
#include "fuzz_tmpdir.h"
#include "trove/capture.h"
#include "trove/input.h"
#include "trove/serve.h"
#include "trove/stream.h"
#include "trove/tables.h"
#include "trove/volume.h"
#include "trove/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz"

static struct {
    char dir[256], store[300], body[300];
    struct trove_store *s;
    struct trove_stream *st;
    uint64_t runs;
} fz;

static const struct trove_event base[3] = {
    {.start_ns = 10, .dur_ns = 5, .tid = 1, .name_id = 0, .kind = TROVE_KIND_ZONE},
    {.start_ns = 20, .dur_ns = 0, .tid = 2, .name_id = 0, .kind = TROVE_KIND_INSTANT},
    {.start_ns = 30, .dur_ns = 7, .tid = 1, .name_id = 0, .kind = TROVE_KIND_ZONE}};

static void cleanup(void)
{
    trove_stream_free(fz.st);
    trove_store_close(fz.s);
    fuzz_remove_tree(fz.dir);
}

static void setup(void)
{
    struct trove_stream_options so;
    struct trove_diag diag = {0};

    if (fz.s)
        return;
    fuzz_make_tmpdir(fz.dir, sizeof fz.dir);
    snprintf(fz.store, sizeof fz.store, "%s/store", fz.dir);
    snprintf(fz.body, sizeof fz.body, "%s/body", fz.dir);
    CHECK(trove_store_open(fz.store, TROVE_STORE_CREATE, &fz.s, &diag) == TROVE_OK);
    trove_stream_options_default(&so);
    so.send_mode = TROVE_STREAM_SEND_INLINE;
    so.max_object = TROVE_CAPTURE_MAX_OBJECT;
    CHECK(trove_stream_new(trove_store_backend(fz.s), &so, &fz.st) == TROVE_OK);
    atexit(cleanup);
}

/* ---- the capture read back -------------------------------------------------------------- */

struct back {
    struct trove_wire_decoder *dec;
    struct trove_events ev;
    struct trove_names *names;
    struct trove_event buf[TROVE_WIRE_MAX_EVENTS];
    int rc;
};

static int back_send(void *ctx, const struct trove_stream_batch *b)
{
    struct back *k = ctx;
    struct trove_wire_frame fr;
    for (size_t at = 0; at < b->len && k->rc == TROVE_OK; at += fr.frame_len) {
        k->rc = trove_wire_decode(k->dec, (const uint8_t *)b->data + at, b->len - at, k->buf,
                                  TROVE_WIRE_MAX_EVENTS, k->names, &fr, NULL);
        for (size_t i = 0; k->rc == TROVE_OK && i < fr.n_events; i++)
            k->rc = trove_events_push(&k->ev, &k->buf[i]);
    }
    return k->rc;
}

static struct back *read_back(void)
{
    static struct back k;
    struct trove_capture_replay_options ro;
    struct trove_stream_sink sink;
    struct trove_diag diag = {0};
    int rc;

    k.ev.len = 0;
    k.rc = TROVE_OK;
    trove_names_free(k.names);
    CHECK(trove_names_new(&k.names) == TROVE_OK);
    if (!k.dec)
        CHECK(trove_wire_decoder_new(&k.dec) == TROVE_OK);
    memset(&ro, 0, sizeof ro);
    ro.to_ns = UINT64_MAX;
    ro.wire = TROVE_WIRE_RAW;
    memset(&sink, 0, sizeof sink);
    sink.send = back_send;
    sink.ctx = &k;
    rc = trove_capture_replay(fz.s, NAME, fz.st, &ro, &sink, NULL, &diag);
    if (rc != TROVE_OK) {
        fprintf(stderr, "reading the imported capture back: %s %s\n", trove_strerror(rc), diag.msg);
        abort();
    }
    return &k;
}

/* ---- one body ----------------------------------------------------------------------------- */

static void write_body(const uint8_t *p, size_t n)
{
    int fd = open(fz.body, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        CHECK(w > 0);
        p += w;
        n -= (size_t)w;
    }
    CHECK(close(fd) == 0);
}

static int same_event(const struct trove_event *a, const struct trove_event *b)
{
    return !memcmp(a, b, sizeof *a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_import_result res;
    struct trove_import_options io;
    struct trove_capture_info info;
    struct trove_gc_report gc;
    struct trove_diag diag = {0};
    int append, status, rc;
    size_t before;

    if (size < 1)
        return 0;
    setup();
    append = data[0] & 1;
    before = append ? 3 : 0;
    if (append)
        CHECK(trove_capture_write(fz.s, NAME, base, 3, NULL, NULL, NULL, &diag) == TROVE_OK);
    write_body(data + 1, size - 1);
    memset(&res, 0, sizeof res);
    memset(&io, 0, sizeof io);
    io.in.label = "body";
    io.append = append;
    status = trove_import(fz.s, NAME, fz.body, &io, &res, &diag);
    if (status != 0) {
        if (!res.bad_input || !diag.msg[0] || strstr(diag.msg, fz.body)) {
            fprintf(stderr, "import failed with %d (bad input %d): %s\n", status, res.bad_input,
                    diag.msg);
            abort();
        }
        rc = trove_capture_info(fz.s, NAME, &info, &diag);
        CHECK(append ? rc == TROVE_OK && info.events == 3 : rc == TROVE_ERR_NOTFOUND);
        if (append)
            CHECK(read_back()->ev.len == 3);
    } else {
        struct trove_events ev = {0};
        struct trove_flows flows = {0}, got = {0};
        struct trove_names *names = NULL;
        struct back *k;
        CHECK(trove_names_new(&names) == TROVE_OK);
        rc = trove_input_load(fz.body, NULL, &ev, names, &flows, NULL);
        CHECK(rc == 0 && res.events == ev.len);
        CHECK(trove_capture_info(fz.s, NAME, &info, &diag) == TROVE_OK);
        CHECK(info.events == before + ev.len);
        k = read_back();
        CHECK(k->ev.len == before + ev.len);
        for (size_t i = 0; i < before; i++)
            CHECK(same_event(&k->ev.ev[i], &base[i]));
        for (size_t i = 0; i < ev.len; i++)
            CHECK(same_event(&k->ev.ev[before + i], &ev.ev[i]));
        CHECK(test_same_names(names, k->names));
        CHECK(trove_capture_read_flows(fz.s, NAME, 0, UINT64_MAX, &got, &diag) == TROVE_OK);
        CHECK(got.len == flows.len &&
              (!got.len || !memcmp(got.f, flows.f, got.len * sizeof *got.f)));
        trove_flows_free(&got);
        trove_flows_free(&flows);
        trove_events_free(&ev);
        trove_names_free(names);
    }
    rc = trove_volume_remove(fz.s, NAME, &diag);
    CHECK(rc == TROVE_OK || (rc == TROVE_ERR_NOTFOUND && !append && status != 0));
    if (++fz.runs % 1000 == 0 && (rc = trove_store_gc(fz.s, &gc, NULL, NULL)) != TROVE_OK) {
        fprintf(stderr, "gc: %s\n", trove_strerror(rc));
        abort();
    }
    return 0;
}
