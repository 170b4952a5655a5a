/*
 * test_oom.c: every operation survives running out of memory at any allocation.
 *
 * Each case runs one operation with allocation N failing (trove_testing_alloc_fail_at), for
 * N = 1, 2, ... until a run in which no allocation was refused, and checks every time that
 * the operation either failed cleanly — TROVE_ERR_NOMEM or -ENOMEM, its outputs as they
 * were — or coped with the failure and produced exactly the result of an unhindered run.
 * Leaks show under ASan, where `make check` runs this too. For the store the committed state
 * must be unchanged after a failure: the volume reads back its old bytes and verify --deep is
 * clean; after a success, the new bytes.
 *
 * Threaded code (the store's put pool) may order its allocations differently from run to
 * run; the sweep then still ends at the first run in which nothing was refused.
 *
 * Covered: the wire encoder and decoder (raw, packed, deflate, columnar, names), the Chrome JSON
 * importer (from memory and streamed from a file, through the JSON tokenizer's window), the
 * generator, recipe v1 and v3 encode and decode, the capture header, Parquet tables written
 * and read, the bundle manifest, a bundle written to a file and read back, a volume commit,
 * the store's gc (mark and sweep), a capture written into a store, a capture replayed
 * from it, and a capture written live (appended to, and new), each also with its names in
 * parts (cut small); and the trace interchange:
 * the Chrome importer on async spans, flows and counters, the Chrome JSON and Perfetto
 * writers (whole, and streamed through sorted runs spilled to disk and merged), the
 * Perfetto reader, the flows object encoded and decoded, the flows table
 * written and read, and a capture written with flows and its flows read back; and the
 * streamed export's writers: the events table in pieces through a deflating bundle entry
 * encoder, and the bundle written front to back; and the profile model (strings, frames,
 * stacks, samples and the top functions; a failed add leaves the profile as it was), and a
 * sample set made into a profile.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trove/bundle.h"
#include "trove/capture.h"
#include "trove/chrome.h"
#include "trove/gen.h"
#include "trove/profile.h"
#include "trove/recipe.h"
#include "trove/sample.h"
#include "trove/tables.h"
#include "trove/testing.h"
#include "trove/trace.h"
#include "trove/volume.h"
#include "trove/wire.h"

/* Generous: the largest case here asks for a few thousand allocations. */
#define MAX_STEPS 200000u

static char tmpdir[] = "/tmp/trove_oom_XXXXXX";
static struct trove_events gen_events;
static struct trove_names *gen_names;

static int is_nomem(int rc) { return rc == TROVE_ERR_NOMEM || rc == -ENOMEM; }

/*
 * One case: op runs the operation once and returns its result; it frees whatever it made
 * itself. check (may be NULL) is called after every run, with the hook off, and returns 1
 * when the outputs are as they must be after that result. Returns the number of
 * allocations the operation made when nothing failed.
 */
typedef int (*op_fn)(void *ctx);
typedef int (*check_fn)(void *ctx, int rc);

static uint64_t sweep(const char *what, op_fn op, check_fn check, void *ctx)
{
    uint64_t n, bad_rc = 0, bad_state = 0;
    for (n = 1; n < MAX_STEPS; n++) {
        int rc;
        uint64_t refused;
        trove_testing_alloc_fail_at(n, 0);
        rc = op(ctx);
        refused = trove_testing_alloc_failures();
        trove_testing_alloc_fail_at(0, 0);
        if (rc != TROVE_OK && !is_nomem(rc)) {
            if (bad_rc++ < 3)
                fprintf(stderr, "%s: allocation %llu failing gave %d (%s), not out of memory\n",
                        what, (unsigned long long)n, rc, trove_strerror(rc));
        }
        if (check && !check(ctx, rc)) {
            if (bad_state++ < 3)
                fprintf(stderr, "%s: allocation %llu failing (rc %d) left the wrong state\n",
                        what, (unsigned long long)n, rc);
        }
        if (refused == 0) {
            CHECK_EQ_INT(rc, TROVE_OK); /* nothing failed: it must have worked */
            break;
        }
    }
    CHECK(n < MAX_STEPS);
    CHECK_EQ_INT(bad_rc, 0);
    CHECK_EQ_INT(bad_state, 0);
    fprintf(stderr, "%-28s %6llu allocations, each made to fail once\n", what,
            (unsigned long long)(n - 1));
    return n - 1;
}

/* ---- wire ------------------------------------------------------------------------------ */

struct wire_ctx {
    int format;
    struct trove_bytes frame; /* a good frame, for the decoder case */
    struct trove_bytes out;   /* the encoder's output, checked after each run */
    struct trove_bytes want;
};

static int op_wire_encode(void *p)
{
    struct wire_ctx *c = p;
    struct trove_wire_encoder *enc = NULL;
    int rc = trove_wire_encoder_new(&enc);
    trove_bytes_free(&c->out);
    if (rc == TROVE_OK)
        rc = c->format < 0 ? trove_wire_encode_names(gen_names, 0, SIZE_MAX, &c->out)
                           : trove_wire_encode(enc, c->format, gen_events.ev, gen_events.len,
                                               &c->out);
    trove_wire_encoder_free(enc);
    return rc;
}

static int check_wire_encode(void *p, int rc)
{
    struct wire_ctx *c = p;
    if (rc != TROVE_OK)
        return c->out.len == 0; /* on error out->len is unchanged */
    return c->out.len == c->want.len && memcmp(c->out.ptr, c->want.ptr, c->want.len) == 0;
}

static int op_wire_decode(void *p)
{
    struct wire_ctx *c = p;
    struct trove_wire_decoder *dec = NULL;
    struct trove_names *names = NULL;
    struct trove_event *ev = calloc(gen_events.len + 1, sizeof *ev);
    struct trove_wire_frame fr;
    int rc = ev ? trove_wire_decoder_new(&dec) : TROVE_ERR_NOMEM;
    if (rc == TROVE_OK)
        rc = trove_names_new(&names);
    if (rc == TROVE_OK)
        rc = trove_wire_decode(dec, c->frame.ptr, c->frame.len, ev, gen_events.len + 1, names,
                               &fr, NULL);
    if (rc == TROVE_OK && c->format >= 0)
        rc = fr.n_events == gen_events.len &&
                     memcmp(ev, gen_events.ev, gen_events.len * sizeof *ev) == 0
                 ? TROVE_OK
                 : TROVE_ERR_MISMATCH;
    if (rc == TROVE_OK && c->format < 0)
        rc = trove_names_equal(names, gen_names) ? TROVE_OK : TROVE_ERR_MISMATCH;
    trove_names_free(names);
    trove_wire_decoder_free(dec);
    free(ev);
    return rc;
}

static void test_wire(void)
{
    static const int formats[] = {TROVE_WIRE_RAW, TROVE_WIRE_PACKED, TROVE_WIRE_DEFLATE,
                                  TROVE_WIRE_COLUMNAR, TROVE_WIRE_COLUMNAR_DEFLATE, -1};
    static const char *const label[] = {"wire encode raw", "wire encode packed",
                                        "wire encode deflate", "wire encode columnar",
                                        "wire encode columnar_deflate", "wire encode names"};
    static const char *const dlabel[] = {"wire decode raw", "wire decode packed",
                                         "wire decode deflate", "wire decode columnar",
                                         "wire decode columnar_deflate", "wire decode names"};
    for (size_t i = 0; i < 6; i++) {
        struct wire_ctx c = {.format = formats[i]};
        CHECK_EQ_INT(op_wire_encode(&c), TROVE_OK);
        CHECK(trove_bytes_append(&c.want, c.out.ptr, c.out.len) == TROVE_OK);
        CHECK(trove_bytes_append(&c.frame, c.out.ptr, c.out.len) == TROVE_OK);
        sweep(label[i], op_wire_encode, check_wire_encode, &c);
        sweep(dlabel[i], op_wire_decode, NULL, &c);
        trove_bytes_free(&c.frame);
        trove_bytes_free(&c.out);
        trove_bytes_free(&c.want);
    }
}

/* ---- Chrome JSON ----------------------------------------------------------------------- */

static const char chrome_doc[] =
    "{\"traceEvents\":["
    "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"browser\"}},"
    "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":7,\"args\":{\"name\":\"main\"}},"
    "{\"ph\":\"X\",\"name\":\"frame\",\"pid\":1,\"tid\":7,\"ts\":10.5,\"dur\":100},"
    "{\"ph\":\"B\",\"name\":\"layout\",\"pid\":1,\"tid\":7,\"ts\":20},"
    "{\"ph\":\"E\",\"pid\":1,\"tid\":7,\"ts\":30.25},"
    "{\"ph\":\"i\",\"name\":\"mark \\u00e9\",\"pid\":1,\"tid\":8,\"ts\":40},"
    "{\"ph\":\"X\",\"name\":\"frame\",\"pid\":2,\"tid\":3,\"ts\":50,\"dur\":5}"
    "]}";

struct chrome_ctx {
    struct trove_events ev;
    struct trove_names *names;
    struct trove_events want_ev;
    struct trove_names *want_names;
};

static int op_chrome(void *p)
{
    struct chrome_ctx *c = p;
    return trove_chrome_import_mem((const uint8_t *)chrome_doc, sizeof chrome_doc - 1, NULL,
                                   &c->ev, c->names, NULL, NULL);
}

static int check_chrome(void *p, int rc)
{
    struct chrome_ctx *c = p;
    int ok;
    if (rc != TROVE_OK)
        return c->ev.len == 0; /* nothing partial appended */
    ok = c->ev.len == c->want_ev.len &&
         memcmp(c->ev.ev, c->want_ev.ev, c->ev.len * sizeof *c->ev.ev) == 0 &&
         trove_names_equal(c->names, c->want_names);
    c->ev.len = 0;
    return ok;
}

/* The streamed form: the tokenizer reads the file through its window. */
static int op_chrome_file(void *p)
{
    struct chrome_ctx *c = p;
    FILE *f = fmemopen((void *)chrome_doc, sizeof chrome_doc - 1, "rb");
    int rc;
    if (!f)
        return -errno;
    rc = trove_chrome_import(f, NULL, &c->ev, c->names, NULL, NULL);
    fclose(f);
    return rc;
}

static void test_chrome(void)
{
    struct chrome_ctx c = {0};
    CHECK(trove_names_new(&c.names) == TROVE_OK);
    CHECK(trove_names_new(&c.want_names) == TROVE_OK);
    CHECK_EQ_INT(trove_chrome_import_mem((const uint8_t *)chrome_doc, sizeof chrome_doc - 1,
                                         NULL, &c.want_ev, c.want_names, NULL, NULL),
                 TROVE_OK);
    CHECK_EQ_INT(c.want_ev.len, 4);
    sweep("chrome json import", op_chrome, check_chrome, &c);
    sweep("chrome json import, file", op_chrome_file, check_chrome, &c);
    trove_events_free(&c.ev);
    trove_events_free(&c.want_ev);
    trove_names_free(c.names);
    trove_names_free(c.want_names);
}

/* ---- the trace interchange ---------------------------------------------------------- */

static const char async_doc[] =
    "[{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":7,\"args\":{\"name\":\"main\"}},"
    "{\"ph\":\"X\",\"name\":\"task\",\"pid\":1,\"tid\":7,\"ts\":1,\"dur\":50},"
    "{\"ph\":\"b\",\"name\":\"load\",\"pid\":1,\"ts\":2,\"id2\":{\"local\":\"0x5\"}},"
    "{\"ph\":\"n\",\"name\":\"tick\",\"pid\":1,\"ts\":3,\"id2\":{\"local\":\"0x5\"}},"
    "{\"ph\":\"e\",\"name\":\"load\",\"pid\":1,\"ts\":9,\"id2\":{\"local\":\"0x5\"}},"
    "{\"ph\":\"S\",\"name\":\"job\",\"pid\":1,\"ts\":10,\"id\":1},"
    "{\"ph\":\"T\",\"name\":\"job\",\"pid\":1,\"ts\":11,\"id\":1,\"args\":{\"step\":\"s1\"}},"
    "{\"ph\":\"F\",\"name\":\"job\",\"pid\":1,\"ts\":12,\"id\":1},"
    "{\"ph\":\"s\",\"name\":\"msg\",\"pid\":1,\"tid\":7,\"ts\":4,\"id\":3},"
    "{\"ph\":\"f\",\"name\":\"msg\",\"pid\":1,\"tid\":7,\"ts\":40,\"id\":3,\"bp\":\"e\"},"
    "{\"ph\":\"X\",\"name\":\"send\",\"pid\":1,\"tid\":7,\"ts\":20,\"dur\":1,"
    "\"bind_id\":\"0x9\",\"flow_out\":true},"
    "{\"ph\":\"C\",\"name\":\"mem\",\"pid\":1,\"ts\":5,\"args\":{\"heap\":7,\"js\":0.5}},"
    "{\"ph\":\"R\",\"name\":\"mark\",\"pid\":1,\"ts\":6}]";

struct trace_ctx {
    struct trove_events ev, want_ev;
    struct trove_flows flows, want_flows;
    struct trove_names *names, *want_names;
    struct trove_bytes out, json_want, pb_want, flows_want, table_want;
    int format;               /* the streaming writer's */
    char spill[96];           /* its temporary directory */
};

static struct trove_trace want_trace(const struct trace_ctx *c)
{
    struct trove_trace t = {c->want_ev.ev, c->want_ev.len, c->want_names, c->want_flows.f,
                            c->want_flows.len};
    return t;
}

static int same_flows(const struct trove_flows *a, const struct trove_flows *b)
{
    return a->len == b->len && (a->len == 0 || !memcmp(a->f, b->f, a->len * sizeof *a->f));
}

static int op_chrome_all(void *p)
{
    struct trace_ctx *c = p;
    return trove_chrome_import_all_mem((const uint8_t *)async_doc, sizeof async_doc - 1, NULL,
                                       &c->ev, c->names, &c->flows, NULL, NULL);
}

/* After a read: nothing partial on failure; on success exactly what an unhindered read gives. */
static int check_read(void *p, int rc)
{
    struct trace_ctx *c = p;
    int ok;
    if (rc != TROVE_OK)
        ok = c->ev.len == 0 && c->flows.len == 0;
    else
        ok = c->ev.len == c->want_ev.len &&
             !memcmp(c->ev.ev, c->want_ev.ev, c->ev.len * sizeof *c->ev.ev) &&
             same_flows(&c->flows, &c->want_flows) && test_same_names(c->names, c->want_names);
    c->ev.len = c->flows.len = 0;
    trove_names_free(c->names);
    c->names = NULL;
    CHECK(trove_names_new(&c->names) == TROVE_OK);
    return ok;
}

static int op_chrome_export(void *p)
{
    struct trace_ctx *c = p;
    struct trove_trace t = want_trace(c);
    trove_bytes_free(&c->out);
    return trove_chrome_export(&t, &c->out, NULL);
}

static int op_perfetto_write(void *p)
{
    struct trace_ctx *c = p;
    struct trove_trace t = want_trace(c);
    trove_bytes_free(&c->out);
    return trove_perfetto_write(&t, &c->out, NULL);
}

static int check_json(void *p, int rc)
{
    struct trace_ctx *c = p;
    return rc != TROVE_OK ? c->out.len == 0
                          : c->out.len == c->json_want.len &&
                                !memcmp(c->out.ptr, c->json_want.ptr, c->out.len);
}

static int check_pb(void *p, int rc)
{
    struct trace_ctx *c = p;
    return rc != TROVE_OK ? c->out.len == 0
                          : c->out.len == c->pb_want.len &&
                                !memcmp(c->out.ptr, c->pb_want.ptr, c->out.len);
}

/* The streaming writer, in runs of 2 events merged 2 at a time: every sort spills to disk and
 * merges in passes. On failure the sink may hold part of the output (not a trace); nothing
 * is left in the temporary directory. */
static int op_trace_stream(void *p)
{
    struct trace_ctx *c = p;
    struct trove_trace_writer_options o = {c->format, 2, 2, c->spill};
    struct trove_trace_writer *w = NULL;
    struct trove_sink sink = {trove_bytes_sink_write, &c->out};
    int rc;

    trove_bytes_free(&c->out);
    if ((rc = trove_trace_writer_new(&o, &w)) != TROVE_OK)
        return rc;
    for (size_t i = 0; rc == TROVE_OK && i < c->want_ev.len; i += 3)
        rc = trove_trace_writer_add(w, c->want_ev.ev + i,
                                    c->want_ev.len - i < 3 ? c->want_ev.len - i : 3, NULL);
    if (rc == TROVE_OK)
        rc = trove_trace_writer_finish(w, c->want_names, c->want_flows.f, c->want_flows.len,
                                       &sink, NULL, NULL);
    trove_trace_writer_free(w);
    return rc;
}

static int check_trace_stream(void *p, int rc)
{
    struct trace_ctx *c = p;
    const struct trove_bytes *want = c->format == TROVE_TRACE_PERFETTO ? &c->pb_want
                                                                       : &c->json_want;
    if (test_count_dir(c->spill) != 0)
        return 0;
    return rc != TROVE_OK ||
           (c->out.len == want->len && !memcmp(c->out.ptr, want->ptr, c->out.len));
}

static int op_perfetto_read(void *p)
{
    struct trace_ctx *c = p;
    return trove_perfetto_read(c->pb_want.ptr, c->pb_want.len, NULL, &c->ev, c->names, &c->flows,
                               NULL, NULL);
}

static int op_flows_encode(void *p)
{
    struct trace_ctx *c = p;
    trove_bytes_free(&c->out);
    return trove_flows_encode(c->want_flows.f, c->want_flows.len, &c->out);
}

static int check_flows_bytes(void *p, int rc)
{
    struct trace_ctx *c = p;
    return rc != TROVE_OK ? c->out.len == 0
                          : c->out.len == c->flows_want.len &&
                                !memcmp(c->out.ptr, c->flows_want.ptr, c->out.len);
}

static int op_flows_decode(void *p)
{
    struct trace_ctx *c = p;
    return trove_flows_decode(c->flows_want.ptr, c->flows_want.len, &c->flows, NULL);
}

static int check_flows_decode(void *p, int rc)
{
    struct trace_ctx *c = p;
    int ok = rc != TROVE_OK ? c->flows.len == 0 : same_flows(&c->flows, &c->want_flows);
    c->flows.len = 0;
    return ok;
}

static int op_flows_table_write(void *p)
{
    struct trace_ctx *c = p;
    trove_bytes_free(&c->out);
    return trove_tables_write_flows(c->want_flows.f, c->want_flows.len, NULL, &c->out, NULL);
}

static int check_flows_table(void *p, int rc)
{
    struct trace_ctx *c = p;
    return rc != TROVE_OK ? c->out.len == 0
                          : c->out.len == c->table_want.len &&
                                !memcmp(c->out.ptr, c->table_want.ptr, c->out.len);
}

static int op_flows_table_read(void *p)
{
    struct trace_ctx *c = p;
    return trove_tables_read_flows(c->table_want.ptr, c->table_want.len, &c->flows, NULL);
}

static void test_trace(void)
{
    struct trace_ctx c;
    struct trove_trace t;

    memset(&c, 0, sizeof c);
    CHECK(trove_names_new(&c.names) == TROVE_OK);
    CHECK(trove_names_new(&c.want_names) == TROVE_OK);
    CHECK_EQ_INT(trove_chrome_import_all_mem((const uint8_t *)async_doc, sizeof async_doc - 1,
                                             NULL, &c.want_ev, c.want_names, &c.want_flows, NULL,
                                             NULL),
                 TROVE_OK);
    CHECK_EQ_INT(c.want_ev.len, 8);
    CHECK_EQ_INT(c.want_flows.len, 3);
    sweep("chrome import, async", op_chrome_all, check_read, &c);
    t = want_trace(&c);
    CHECK_EQ_INT(trove_chrome_export(&t, &c.json_want, NULL), TROVE_OK);
    sweep("chrome json export", op_chrome_export, check_json, &c);
    CHECK_EQ_INT(trove_perfetto_write(&t, &c.pb_want, NULL), TROVE_OK);
    sweep("perfetto write", op_perfetto_write, check_pb, &c);
    snprintf(c.spill, sizeof c.spill, "%s/spill", tmpdir);
    CHECK(mkdir(c.spill, 0700) == 0);
    c.format = TROVE_TRACE_CHROME_JSON;
    sweep("chrome json export, streamed through the disk", op_trace_stream, check_trace_stream,
          &c);
    c.format = TROVE_TRACE_PERFETTO;
    sweep("perfetto write, streamed through the disk", op_trace_stream, check_trace_stream, &c);
    sweep("perfetto read", op_perfetto_read, check_read, &c);
    CHECK_EQ_INT(trove_flows_encode(c.want_flows.f, c.want_flows.len, &c.flows_want), TROVE_OK);
    sweep("flows encode", op_flows_encode, check_flows_bytes, &c);
    sweep("flows decode", op_flows_decode, check_flows_decode, &c);
    CHECK_EQ_INT(trove_tables_write_flows(c.want_flows.f, c.want_flows.len, NULL, &c.table_want,
                                          NULL),
                 TROVE_OK);
    sweep("flows table write", op_flows_table_write, check_flows_table, &c);
    sweep("flows table read", op_flows_table_read, check_flows_decode, &c);
    trove_events_free(&c.ev);
    trove_events_free(&c.want_ev);
    trove_flows_free(&c.flows);
    trove_flows_free(&c.want_flows);
    trove_names_free(c.names);
    trove_names_free(c.want_names);
    trove_bytes_free(&c.out);
    trove_bytes_free(&c.json_want);
    trove_bytes_free(&c.pb_want);
    trove_bytes_free(&c.flows_want);
    trove_bytes_free(&c.table_want);
}

/* ---- recipes and the capture header ---------------------------------------------------- */

#define RSLOTS 3000u
static struct trove_digest rdig[RSLOTS];

struct bytes_ctx {
    struct trove_bytes out, want;
};

static int check_bytes(void *p, int rc)
{
    struct bytes_ctx *c = p;
    int ok = rc != TROVE_OK ? c->out.len == 0
                            : c->out.len == c->want.len &&
                                  memcmp(c->out.ptr, c->want.ptr, c->want.len) == 0;
    trove_bytes_free(&c->out); /* the next run starts with no buffer, so it allocates */
    return ok;
}

static int op_recipe_v1_encode(void *p)
{
    struct bytes_ctx *c = p;
    return trove_recipe_v1_encode((uint64_t)RSLOTS * 4096, 4096, 0, 7, rdig, RSLOTS, &c->out);
}

static int op_recipe_v1_decode(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_recipe_v1 r;
    struct trove_digest d;
    int rc = trove_recipe_v1_decode(c->want.ptr, c->want.len, &r, NULL);
    if (rc == TROVE_OK) {
        trove_recipe_v1_slot(&r, RSLOTS - 1, &d);
        rc = trove_digest_equal(&d, &rdig[RSLOTS - 1]) ? TROVE_OK : TROVE_ERR_MISMATCH;
    }
    return rc;
}

static int op_v3_chunk(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_digest back[1024];
    int rc = trove_recipe_v3_chunk_encode(rdig, 1024, &c->out);
    if (rc == TROVE_OK)
        rc = trove_recipe_v3_chunk_decode(c->out.ptr, c->out.len, 1024, back, NULL);
    if (rc == TROVE_OK)
        rc = memcmp(back, rdig, sizeof back) == 0 ? TROVE_OK : TROVE_ERR_MISMATCH;
    return rc;
}

static int op_v3_segment(void *p)
{
    struct bytes_ctx *c = p;
    uint32_t idx[1024], back[1024];
    uint8_t enc;
    int rc;
    for (uint32_t i = 0; i < 1024; i++)
        idx[i] = (i * 37u) % 900u;
    rc = trove_recipe_v3_segment_encode(idx, 1024, &c->out);
    if (rc == TROVE_OK)
        rc = trove_recipe_v3_segment_decode(c->out.ptr, c->out.len, 1024, 1000, back, NULL,
                                            &enc, NULL);
    if (rc == TROVE_OK)
        rc = memcmp(back, idx, sizeof idx) == 0 ? TROVE_OK : TROVE_ERR_MISMATCH;
    return rc;
}

static int op_v3_page(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_v3_section sec[3], back[8];
    uint32_t n = 0;
    int rc;
    for (int i = 0; i < 3; i++) {
        sec[i].d = rdig[10 + i];
        sec[i].kind = i == 2 ? TROVE_V3_KIND_DICT : TROVE_V3_KIND_COLUMN; /* columns first */
        sec[i].encoding = i == 2 ? TROVE_V3_ENC_NONE : TROVE_V3_ENC_PACKED;
    }
    rc = trove_recipe_v3_page_encode(sec, 3, &c->out);
    if (rc == TROVE_OK)
        rc = trove_recipe_v3_page_decode(c->out.ptr, c->out.len, back, &n, NULL);
    if (rc == TROVE_OK)
        rc = n == 3 && trove_digest_equal(&back[2].d, &sec[2].d) ? TROVE_OK : TROVE_ERR_MISMATCH;
    return rc;
}

static int op_v3_patch(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_v3_patch pt, back;
    memset(&pt, 0, sizeof pt);
    pt.base = rdig[20];
    pt.k = 3;
    for (uint32_t i = 0; i < 3; i++) {
        pt.off[i] = (uint16_t)(100 * i + 7);
        pt.idx[i] = 40 + i;
    }
    int rc = trove_recipe_v3_patch_encode(&pt, 1024, &c->out);
    if (rc == TROVE_OK)
        rc = trove_recipe_v3_patch_decode(c->out.ptr, c->out.len, 1024, 1000, &back, NULL);
    if (rc == TROVE_OK)
        rc = back.k == 3 && back.off[2] == 207 && back.idx[2] == 42 ? TROVE_OK
                                                                    : TROVE_ERR_MISMATCH;
    return rc;
}

static int op_v3_manifest(void *p)
{
    struct bytes_ctx *c = p;
    uint32_t pages = (uint32_t)trove_recipe_v3_pages(RSLOTS, 1000);
    struct trove_recipe_v3 m;
    int rc = trove_recipe_v3_encode((uint64_t)RSLOTS * 4096, 4096, 0, 3, 1000, rdig + 1, pages,
                                    &c->out);
    if (rc == TROVE_OK)
        rc = trove_recipe_v3_decode(c->out.ptr, c->out.len, &m, NULL);
    return rc;
}

static int check_reset(void *p, int rc)
{
    struct bytes_ctx *c = p;
    (void)rc;
    trove_bytes_free(&c->out);
    return 1;
}

/* The capture header: the golden vector decoded, then encoded again (equal bytes). */
static int op_capture_header(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_capture_header h = {0};
    int rc = trove_capture_header_decode(c->want.ptr, c->want.len, &h, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_header_encode(&h, &c->out);
    if (rc == TROVE_OK)
        rc = c->out.len == c->want.len && memcmp(c->out.ptr, c->want.ptr, c->want.len) == 0
                 ? TROVE_OK
                 : TROVE_ERR_MISMATCH;
    trove_capture_header_free(&h);
    return rc;
}

/* The generator: the events and names of an unhindered run, or nothing appended. */
struct gen_ctx {
    struct trove_gen_options g;
    struct trove_events ev;
    struct trove_names *names;
};

static int op_gen(void *p)
{
    struct gen_ctx *c = p;
    return trove_gen(&c->g, &c->ev, c->names);
}

static int check_gen(void *p, int rc)
{
    struct gen_ctx *c = p;
    int ok = rc != TROVE_OK ||
             (c->ev.len == gen_events.len &&
              memcmp(c->ev.ev, gen_events.ev, c->ev.len * sizeof *c->ev.ev) == 0 &&
              test_same_names(c->names, gen_names));
    c->ev.len = 0;
    return ok;
}

static void test_formats(void)
{
    struct bytes_ctx c = {0};
    for (uint32_t i = 0; i < RSLOTS; i++) {
        uint32_t v = i % 1000u + 1;
        trove_digest_of(&v, sizeof v, &rdig[i]);
    }
    memset(&rdig[5], 0, sizeof rdig[5]); /* an empty slot */
    CHECK_EQ_INT(op_recipe_v1_encode(&c), TROVE_OK);
    CHECK(trove_bytes_append(&c.want, c.out.ptr, c.out.len) == TROVE_OK);
    trove_bytes_free(&c.out);
    sweep("recipe v1 encode", op_recipe_v1_encode, check_bytes, &c);
    sweep("recipe v1 decode", op_recipe_v1_decode, NULL, &c);
    memset(&rdig[0], 0, sizeof rdig[0]); /* v3 chunks: entry 0 is reserved */
    sweep("recipe v3 chunk", op_v3_chunk, check_reset, &c);
    sweep("recipe v3 segment", op_v3_segment, check_reset, &c);
    sweep("recipe v3 page", op_v3_page, check_reset, &c);
    sweep("recipe v3 patch", op_v3_patch, check_reset, &c);
    sweep("recipe v3 manifest", op_v3_manifest, check_reset, &c);
    trove_bytes_free(&c.want);
    {
        size_t len = 0;
        uint8_t *golden = test_read_file(TROVE_SOURCE_DIR "/tests/vectors/capture_header.bin", &len);
        CHECK(golden != NULL);
        c.want.len = 0;
        CHECK(golden && trove_bytes_append(&c.want, golden, len) == TROVE_OK);
        free(golden);
    }
    sweep("capture header", op_capture_header, check_reset, &c);
    trove_bytes_free(&c.out);
    trove_bytes_free(&c.want);
}

/* ---- Parquet tables, the manifest and the bundle --------------------------------------- */

static struct trove_bytes tab_want[TROVE_TABLE_COUNT_];

static int op_tables_write(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_tables_options o;
    trove_tables_defaults(&o);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
        int rc;
        trove_bytes_free(&c->out);
        if ((rc = trove_tables_write(t, &gen_events, gen_names, &o, &c->out, NULL)) != TROVE_OK)
            return rc;
        if (c->out.len != tab_want[t].len || memcmp(c->out.ptr, tab_want[t].ptr, c->out.len))
            return TROVE_ERR_MISMATCH;
    }
    return TROVE_OK;
}

static int op_tables_read(void *p)
{
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    int rc = trove_names_new(&names);
    (void)p;
    for (int t = 0; rc == TROVE_OK && t < TROVE_TABLE_COUNT_; t++)
        if (!TROVE_TABLE_IS_PROFILE(t)) /* read by trove_tables_read_profile */
            rc = trove_tables_read(t, tab_want[t].ptr, tab_want[t].len, &ev, names, NULL);
    if (rc == TROVE_OK)
        rc = ev.len == gen_events.len &&
                     memcmp(ev.ev, gen_events.ev, ev.len * sizeof *ev.ev) == 0 &&
                     test_same_names(names, gen_names)
                 ? TROVE_OK
                 : TROVE_ERR_MISMATCH;
    trove_events_free(&ev);
    trove_names_free(names);
    return rc;
}

/* ---- a profile: its samples frames and its tables ---- */

static struct trove_profile *oom_prof;
static struct trove_bytes prof_frames, prof_tab[TROVE_TABLE_COUNT_];
static const int prof_tables[4] = {TROVE_TABLE_SAMPLES, TROVE_TABLE_FRAMES, TROVE_TABLE_STACKS,
                                   TROVE_TABLE_SWITCHES};

static void make_oom_profile(void)
{
    uint32_t mod, file, stack = 0;
    CHECK_EQ_INT(trove_profile_new(&oom_prof), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(oom_prof, "/bin/x", 6, &mod), TROVE_OK);
    CHECK_EQ_INT(trove_profile_string(oom_prof, "x.c", 3, &file), TROVE_OK);
    for (uint32_t i = 0; i < 300; i++) {
        char fn[16];
        struct trove_profile_frame f = {mod, 0, file, i, 16 * (uint64_t)i, i % 2};
        struct trove_profile_sample sm = {1000 * (uint64_t)i, 1, 2 + i % 3, 0};
        struct trove_profile_switch sw = {1000 * (uint64_t)i + 1, 1, 2, i % 2};
        uint32_t id;
        int n = snprintf(fn, sizeof fn, "f%u", i);
        CHECK_EQ_INT(trove_profile_string(oom_prof, fn, (size_t)n, &f.function), TROVE_OK);
        CHECK_EQ_INT(trove_profile_frame(oom_prof, &f, &id), TROVE_OK);
        CHECK_EQ_INT(trove_profile_stack(oom_prof, stack % 50, id, &stack), TROVE_OK);
        sm.stack = stack;
        CHECK_EQ_INT(trove_profile_sample(oom_prof, &sm), TROVE_OK);
        CHECK_EQ_INT(trove_profile_switch(oom_prof, &sw), TROVE_OK);
    }
    CHECK_EQ_INT(trove_profile_encode(oom_prof, NULL, &prof_frames), TROVE_OK);
    for (int k = 0; k < 4; k++)
        CHECK_EQ_INT(trove_tables_write_profile(prof_tables[k], oom_prof, NULL,
                                                &prof_tab[prof_tables[k]], NULL),
                     TROVE_OK);
}

static int same_counts(const struct trove_profile *a, const struct trove_profile *b)
{
    struct trove_profile_counts x, y;
    trove_profile_get_counts(a, &x);
    trove_profile_get_counts(b, &y);
    return !memcmp(&x, &y, sizeof x);
}

static int op_profile_encode(void *p)
{
    struct trove_bytes out = {0};
    int rc = trove_profile_encode(oom_prof, NULL, &out);
    (void)p;
    if (rc == TROVE_OK)
        rc = out.len == prof_frames.len && !memcmp(out.ptr, prof_frames.ptr, out.len)
                 ? TROVE_OK
                 : TROVE_ERR_MISMATCH;
    trove_bytes_free(&out);
    return rc;
}

static int op_profile_decode(void *p)
{
    struct trove_profile *q = NULL;
    size_t at = 0;
    int rc = trove_profile_new(&q);
    (void)p;
    while (rc == TROVE_OK && at < prof_frames.len) {
        size_t len = 0;
        struct trove_profile_counts before, after;
        trove_profile_get_counts(q, &before);
        rc = trove_profile_decode(q, prof_frames.ptr + at, prof_frames.len - at, &len, NULL);
        trove_profile_get_counts(q, &after);
        if (rc != TROVE_OK && memcmp(&before, &after, sizeof before))
            rc = TROVE_ERR_MISMATCH; /* a failed frame must leave the profile as it was */
        at += len;
    }
    if (rc == TROVE_OK && !same_counts(q, oom_prof))
        rc = TROVE_ERR_MISMATCH;
    trove_profile_free(q);
    return rc;
}

static int op_profile_tables_write(void *p)
{
    int rc = TROVE_OK;
    (void)p;
    for (int k = 0; rc == TROVE_OK && k < 4; k++) {
        struct trove_bytes out = {0};
        int t = prof_tables[k];
        rc = trove_tables_write_profile(t, oom_prof, NULL, &out, NULL);
        if (rc == TROVE_OK && (out.len != prof_tab[t].len || memcmp(out.ptr, prof_tab[t].ptr, out.len)))
            rc = TROVE_ERR_MISMATCH;
        trove_bytes_free(&out);
    }
    return rc;
}

static int op_profile_tables_read(void *p)
{
    struct trove_tables_profile_in in;
    struct trove_profile *q = NULL;
    int rc = trove_profile_new(&q);
    (void)p;
    memset(&in, 0, sizeof in);
    for (int k = 0; k < 4; k++) {
        in.buf[prof_tables[k]] = prof_tab[prof_tables[k]].ptr;
        in.len[prof_tables[k]] = prof_tab[prof_tables[k]].len;
    }
    if (rc == TROVE_OK)
        rc = trove_tables_read_profile(&in, q, NULL);
    if (rc == TROVE_OK && !same_counts(q, oom_prof))
        rc = TROVE_ERR_MISMATCH;
    trove_profile_free(q);
    return rc;
}

static void test_profile(void)
{
    make_oom_profile();
    sweep("profile samples frames", op_profile_encode, NULL, NULL);
    sweep("profile frames decode", op_profile_decode, NULL, NULL);
    sweep("profile tables write", op_profile_tables_write, NULL, NULL);
    sweep("profile tables read", op_profile_tables_read, NULL, NULL);
    trove_profile_free(oom_prof);
    trove_bytes_free(&prof_frames);
    for (int k = 0; k < 4; k++)
        trove_bytes_free(&prof_tab[prof_tables[k]]);
}

static struct trove_bundle_manifest manifest(void)
{
    struct trove_bundle_manifest m;
    memset(&m, 0, sizeof m);
    m.format_version = TROVE_BUNDLE_FORMAT_VERSION;
    snprintf(m.capture, sizeof m.capture, "oom");
    m.start_ns = 1;
    m.end_ns = 2;
    m.events = gen_events.len;
    m.ntables = TROVE_TABLE_COUNT_;
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        snprintf(m.tables[t], sizeof m.tables[t], "%s.parquet", trove_table_name(t));
    snprintf(m.trove_version, sizeof m.trove_version, "0.1.0");
    return m;
}

static int op_manifest(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_bundle_manifest m = manifest(), back;
    int rc = trove_bundle_manifest_encode(&m, &c->out);
    if (rc == TROVE_OK)
        rc = trove_bundle_manifest_decode(c->out.ptr, c->out.len, &back, NULL);
    if (rc == TROVE_OK)
        rc = back.events == m.events && back.ntables == m.ntables ? TROVE_OK : TROVE_ERR_MISMATCH;
    return rc;
}

/* The export's last steps, as `trove export` takes them: the manifest, then the bundle
 * written beside its path and renamed over it. */
struct bundle_ctx {
    char path[256];
    struct trove_bytes old; /* what path held before */
};

static int op_bundle_export(void *p)
{
    struct bundle_ctx *c = p;
    struct trove_bundle_manifest m = manifest();
    struct trove_bytes man = {0};
    struct trove_bundle_entry ent[TROVE_TABLE_COUNT_ + 1];
    char names[TROVE_TABLE_COUNT_][64];
    int rc = trove_bundle_manifest_encode(&m, &man);
    if (rc == TROVE_OK) {
        ent[0].name = "manifest.json";
        ent[0].data = man.ptr;
        ent[0].len = man.len;
        for (int t = 0; t < TROVE_TABLE_COUNT_; t++) {
            snprintf(names[t], sizeof names[t], "%s.parquet", trove_table_name(t));
            ent[t + 1].name = names[t];
            ent[t + 1].data = tab_want[t].ptr;
            ent[t + 1].len = tab_want[t].len;
        }
        rc = trove_bundle_write(c->path, ent, TROVE_TABLE_COUNT_ + 1, 1, NULL);
    }
    trove_bytes_free(&man);
    return rc;
}

static int check_bundle_export(void *p, int rc)
{
    struct bundle_ctx *c = p;
    size_t len = 0;
    uint8_t *now = test_read_file(c->path, &len);
    char tmp[300];
    struct stat st;
    int ok;
    snprintf(tmp, sizeof tmp, "%s.tmp", c->path);
    ok = now != NULL && stat(tmp, &st) != 0; /* never a temp file left */
    if (ok && rc != TROVE_OK) /* the earlier file untouched */
        ok = len == c->old.len && memcmp(now, c->old.ptr, len) == 0;
    if (ok && rc == TROVE_OK) { /* a whole bundle that reads back */
        struct trove_bundle *b = NULL;
        struct trove_bytes back = {0};
        ok = trove_bundle_open_mem(now, len, &b, NULL) == TROVE_OK &&
             trove_bundle_read(b, "events.parquet", UINT64_MAX, &back, NULL) == TROVE_OK &&
             back.len == tab_want[0].len && memcmp(back.ptr, tab_want[0].ptr, back.len) == 0;
        trove_bundle_close(b);
        trove_bytes_free(&back);
        /* put the old file back for the next run */
        FILE *f = fopen(c->path, "wb");
        ok = ok && f && fwrite(c->old.ptr, 1, c->old.len, f) == c->old.len;
        if (f)
            fclose(f);
    }
    free(now);
    return ok;
}

static int op_bundle_read(void *p)
{
    struct bundle_ctx *c = p;
    struct trove_bundle *b = NULL;
    struct trove_bytes back = {0};
    int rc = trove_bundle_open_file(c->path, &b, NULL);
    for (int t = 0; rc == TROVE_OK && t < TROVE_TABLE_COUNT_; t++) {
        char name[64];
        snprintf(name, sizeof name, "%s.parquet", trove_table_name(t));
        back.len = 0;
        rc = trove_bundle_read(b, name, UINT64_MAX, &back, NULL);
        if (rc == TROVE_OK && (back.len != tab_want[t].len ||
                               memcmp(back.ptr, tab_want[t].ptr, back.len) != 0))
            rc = TROVE_ERR_MISMATCH;
    }
    trove_bundle_close(b);
    trove_bytes_free(&back);
    return rc;
}

/* The streamed export: the events table in pieces of whole row groups (200 of the 700
 * events) through a deflating entry encoder, then the zip front to back with the names
 * table; the bytes are trove_bundle_write_mem's of the same tables (c->want). */
#define STREAM_RG 200u

static int op_stream_export(void *p)
{
    struct bytes_ctx *c = p;
    struct trove_tables_options o;
    struct trove_bytes stored = {0};
    struct trove_sink to_stored = {trove_bytes_sink_write, &stored};
    struct trove_sink to_out = {trove_bytes_sink_write, &c->out}, via;
    struct trove_tables_events *t = NULL;
    struct trove_bundle_enc *enc = NULL;
    struct trove_bundle_writer *w = NULL;
    struct trove_bundle_entry_info info;
    struct trove_bundle_entry names = {"names.parquet", tab_want[TROVE_TABLE_NAMES].ptr,
                                       tab_want[TROVE_TABLE_NAMES].len};
    int rc;

    trove_tables_defaults(&o);
    o.row_group_rows = STREAM_RG;
    trove_bytes_free(&c->out);
    rc = trove_bundle_enc_new(1, &to_stored, &enc);
    if (rc == TROVE_OK) {
        trove_bundle_enc_sink(enc, &via);
        rc = trove_tables_events_begin(&o, &via, &t);
    }
    for (size_t at = 0; rc == TROVE_OK && at < gen_events.len; at += STREAM_RG)
        rc = trove_tables_events_add(t, gen_events.ev + at, gen_events.len - at < STREAM_RG
                                                                ? gen_events.len - at
                                                                : STREAM_RG);
    if (rc == TROVE_OK)
        rc = trove_tables_events_finish(t, NULL, NULL);
    if (rc == TROVE_OK)
        rc = trove_bundle_enc_finish(enc, &info);
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_new(1, &to_out, &w);
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_begin(w, "events.parquet", &info, NULL);
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_data(w, stored.ptr, stored.len);
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_add(w, &names, NULL);
    if (rc == TROVE_OK)
        rc = trove_bundle_writer_finish(w, NULL);
    if (rc == TROVE_OK && (c->out.len != c->want.len || memcmp(c->out.ptr, c->want.ptr, c->out.len)))
        rc = TROVE_ERR_MISMATCH;
    trove_bundle_writer_free(w);
    trove_bundle_enc_free(enc);
    trove_tables_events_free(t);
    trove_bytes_free(&stored);
    return rc;
}

static void test_columnar(void)
{
    struct bytes_ctx c = {0};
    struct bundle_ctx bc = {0};
    struct trove_tables_options o;
    FILE *f;

    trove_tables_defaults(&o);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        CHECK_EQ_INT(trove_tables_write(t, &gen_events, gen_names, &o, &tab_want[t], NULL),
                     TROVE_OK);
    sweep("parquet tables write", op_tables_write, check_reset, &c);
    sweep("parquet tables read", op_tables_read, NULL, &c);
    sweep("bundle manifest", op_manifest, check_reset, &c);
    {
        struct bytes_ctx sc = {0};
        struct trove_bytes ev = {0};
        struct trove_bundle_entry e[2];
        o.row_group_rows = STREAM_RG;
        CHECK_EQ_INT(trove_tables_write(TROVE_TABLE_EVENTS, &gen_events, gen_names, &o, &ev, NULL),
                     TROVE_OK);
        e[0] = (struct trove_bundle_entry){"events.parquet", ev.ptr, ev.len};
        e[1] = (struct trove_bundle_entry){"names.parquet", tab_want[TROVE_TABLE_NAMES].ptr,
                                           tab_want[TROVE_TABLE_NAMES].len};
        CHECK_EQ_INT(trove_bundle_write_mem(e, 2, 1, &sc.want, NULL), TROVE_OK);
        sweep("streamed bundle export", op_stream_export, check_reset, &sc);
        trove_bytes_free(&ev);
        trove_bytes_free(&sc.want);
        trove_bytes_free(&sc.out);
        trove_tables_defaults(&o);
    }

    snprintf(bc.path, sizeof bc.path, "%s/export.bundle", tmpdir);
    CHECK(trove_bytes_append(&bc.old, "an earlier file", 15) == TROVE_OK);
    f = fopen(bc.path, "wb");
    CHECK(f && fwrite(bc.old.ptr, 1, bc.old.len, f) == bc.old.len);
    if (f)
        fclose(f);
    sweep("bundle export", op_bundle_export, check_bundle_export, &bc);
    CHECK_EQ_INT(op_bundle_export(&bc), TROVE_OK); /* now a real bundle, to read */
    sweep("bundle read", op_bundle_read, NULL, &bc);
    trove_bytes_free(&bc.old);
    trove_bytes_free(&c.out);
}

/* ---- the store: a volume commit, a capture import and its replay ----------------------- */

#define VBLOCK 4096u
#define VBLOCKS 24u
static uint8_t vold[VBLOCK * VBLOCKS], vnew[VBLOCK * VBLOCKS];

struct store_ctx {
    char dir[256];
    char live[16]; /* the live writer's case: "live" (append) or "fresh" */
    const struct trove_names *live_names; /* the names "live" holds before the append */
};

static int store_clean(const char *dir)
{
    struct trove_store *s = NULL;
    struct trove_verify_report rep;
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_store_verify(s, TROVE_VERIFY_DEEP, &rep, NULL, NULL);
    trove_store_close(s);
    return rc == TROVE_OK;
}

static int volume_equals(const char *dir, const uint8_t *want)
{
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    static uint8_t got[sizeof vold];
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_open(s, "vol", &v, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_read(v, 0, got, sizeof got);
    trove_volume_close(v);
    trove_store_close(s);
    return rc == TROVE_OK && memcmp(got, want, sizeof got) == 0;
}

/* Write `data` over the whole volume and commit, as `trove volume write` does. */
static int volume_put(const char *dir, const uint8_t *data)
{
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    int rc = trove_store_open(dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_open(s, "vol", &v, NULL);
    if (rc == TROVE_OK)
        rc = trove_volume_write(v, 0, data, sizeof vold);
    if (rc == TROVE_OK)
        rc = trove_volume_commit(v);
    trove_volume_close(v);
    trove_store_close(s);
    return rc;
}

static int op_volume_commit(void *p) { return volume_put(((struct store_ctx *)p)->dir, vnew); }

static int check_volume_commit(void *p, int rc)
{
    struct store_ctx *c = p;
    int ok = store_clean(c->dir) && volume_equals(c->dir, rc == TROVE_OK ? vnew : vold);
    if (ok && rc == TROVE_OK) /* back to the old bytes for the next run */
        ok = volume_put(c->dir, vold) == TROVE_OK;
    return ok;
}

/* gc: the mark (every recipe, counted) and the sweep (the backend's list) allocate. */
static const char garbage[] = "an object no recipe names";

static int garbage_put(const char *dir)
{
    struct trove_store *s = NULL;
    struct trove_digest d;
    int rc = trove_store_open(dir, TROVE_STORE_NOSYNC, &s, NULL);
    trove_digest_of(garbage, sizeof garbage, &d);
    if (rc == TROVE_OK)
        rc = trove_backend_put(trove_store_backend(s), &d, garbage, sizeof garbage, NULL);
    trove_store_close(s);
    return rc;
}

static int garbage_there(const char *dir)
{
    struct trove_store *s = NULL;
    struct trove_digest d;
    uint64_t len = 0;
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    trove_digest_of(garbage, sizeof garbage, &d);
    if (rc == TROVE_OK)
        rc = trove_backend_size(trove_store_backend(s), &d, &len);
    trove_store_close(s);
    return rc == TROVE_OK;
}

static int op_gc(void *p)
{
    struct trove_store *s = NULL;
    struct trove_gc_report rep;
    int rc = trove_store_open(((struct store_ctx *)p)->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_store_gc(s, &rep, NULL, NULL);
    trove_store_close(s);
    return rc;
}

static int check_gc(void *p, int rc)
{
    struct store_ctx *c = p;
    int ok = store_clean(c->dir) && volume_equals(c->dir, vold);
    if (ok && rc == TROVE_OK) /* the garbage went; put it back for the next run */
        ok = !garbage_there(c->dir) && garbage_put(c->dir) == TROVE_OK;
    return ok;
}

static int op_capture_write(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_options o = {.segment_bytes = 32 * 256, .frame_events = 100};
    int rc = trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_write(s, "cap", gen_events.ev, gen_events.len, gen_names, &o, NULL,
                                 NULL);
    trove_store_close(s);
    return rc;
}

/* Flow rows for the capture with flows: one per 10 events, on their threads. */
static struct trove_flows cap_flows;

static int op_capture_write_flows(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_options o = {.segment_bytes = 32 * 256, .frame_events = 100};
    int rc = trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_write_trace(s, "cap", gen_events.ev, gen_events.len, gen_names,
                                       cap_flows.f, cap_flows.len, &o, NULL, NULL);
    trove_store_close(s);
    return rc;
}

static int op_capture_read_flows(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_flows got = {0};
    int rc = trove_store_open(c->dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_read_flows(s, "cap", 0, UINT64_MAX, &got, NULL);
    if (rc == TROVE_OK && !same_flows(&got, &cap_flows))
        rc = TROVE_ERR_MISMATCH;
    trove_flows_free(&got);
    trove_store_close(s);
    return rc;
}

static int capture_events(const char *dir, uint64_t *events_out)
{
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    int rc = trove_store_open(dir, TROVE_STORE_READONLY, &s, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_info(s, "cap", &info, NULL);
    trove_store_close(s);
    *events_out = rc == TROVE_OK ? info.events : 0;
    return rc;
}

static int check_capture_write(void *p, int rc)
{
    struct store_ctx *c = p;
    uint64_t events = 0;
    int got = capture_events(c->dir, &events);
    int ok = store_clean(c->dir);

    if (rc == TROVE_OK) {
        ok = ok && got == TROVE_OK && events == gen_events.len;
        /* remove it again, so the next run writes it from nothing */
        struct trove_store *s = NULL;
        ok = ok && trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL) == TROVE_OK &&
             trove_volume_remove(s, "cap", NULL) == TROVE_OK;
        trove_store_close(s);
    } else {
        /* the capture is there whole or not at all */
        ok = ok && (got == TROVE_ERR_NOTFOUND || (got == TROVE_OK && events == gen_events.len));
    }
    return ok;
}

/* The live writer (capture_live.c) over the same events, names and sizes as "cap": an append
 * to "live", which holds the first half without names, adds the second half in batches that
 * fill segments, merges the names and commits; a new capture "fresh" gets them all. */
static const struct trove_capture_options live_opt = {.segment_bytes = 32 * 256,
                                                      .frame_events = 100};

static int live_write(struct trove_store *s, const char *name, int append, size_t from)
{
    struct trove_capture_writer *w = NULL;
    int rc = trove_capture_writer_open(s, name, append, &live_opt, &w, NULL);
    for (size_t at = from; rc == TROVE_OK && at < gen_events.len; at += 150)
        rc = trove_capture_writer_add(w, gen_events.ev + at,
                                      gen_events.len - at < 150 ? gen_events.len - at : 150, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_writer_names(w, gen_names, NULL);
    if (rc == TROVE_OK)
        rc = trove_capture_writer_commit(w, NULL, NULL);
    trove_capture_writer_close(w);
    return rc;
}

static int op_capture_live(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    int rc = trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL);
    if (rc == TROVE_OK)
        rc = live_write(s, c->live, c->live[0] == 'l', c->live[0] == 'l' ? gen_events.len / 2 : 0);
    trove_store_close(s);
    return rc;
}

/* Capture `name` has the objects of "cap" (-> 1), or it holds `events` events (-> 2), or
 * neither (0). */
static int live_state(struct trove_store *s, const char *name, uint64_t events)
{
    struct trove_volume *va = NULL, *vb = NULL;
    struct trove_volume_info ia, ib;
    struct trove_digest da[40], db[40];
    struct trove_capture_info info;
    int state = 0;

    if (trove_capture_info(s, name, &info, NULL) != TROVE_OK)
        return 0;
    if (info.events == events && events != gen_events.len)
        return 2;
    if (trove_volume_open(s, name, &va, NULL) == TROVE_OK &&
        trove_volume_open(s, "cap", &vb, NULL) == TROVE_OK && trove_volume_info(va, &ia) == 0 &&
        trove_volume_info(vb, &ib) == 0 && ia.slots == ib.slots && ia.slots <= 40 &&
        trove_volume_slot_digests(va, 0, ia.slots, da) == 0 &&
        trove_volume_slot_digests(vb, 0, ib.slots, db) == 0 &&
        memcmp(da, db, ia.slots * sizeof *da) == 0)
        state = 1;
    trove_volume_close(va);
    trove_volume_close(vb);
    return state;
}

/* After a failure "live" is still the first half (or, after a failure once the commit was
 * durable, whole) and "fresh" is not there; after a success either is "cap", object for
 * object, and is put back for the next run. */
static int check_capture_live(void *p, int rc)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_info info;
    int append = c->live[0] == 'l', ok = store_clean(c->dir), state;

    ok = ok && trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL) == TROVE_OK;
    state = ok ? live_state(s, c->live, append ? gen_events.len / 2 : 0) : -1;
    if (rc == TROVE_OK)
        ok = ok && state == 1;
    else if (append)
        ok = ok && (state == 1 || state == 2);
    else /* a new capture is there whole or not at all: no volume is left behind */
        ok = ok &&
             (state == 1 || trove_capture_info(s, c->live, &info, NULL) == TROVE_ERR_NOTFOUND);
    if (ok && state == 1)
        ok = append ? trove_capture_write(s, c->live, gen_events.ev, gen_events.len / 2,
                                          c->live_names, &live_opt, NULL, NULL) == TROVE_OK
                    : trove_volume_remove(s, c->live, NULL) == TROVE_OK;
    trove_store_close(s);
    return ok;
}

/* The live writer's sweeps: an append to "live", which holds the first half of the events
 * (and c->live_names) as "cap" would, and a new capture "fresh". */
static void sweep_live(struct store_ctx *c, const char *what)
{
    struct trove_store *s = NULL;
    char label[80];

    CHECK_EQ_INT(trove_store_open(c->dir, TROVE_STORE_NOSYNC, &s, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_capture_write(s, "live", gen_events.ev, gen_events.len / 2, c->live_names,
                                     &live_opt, NULL, NULL),
                 TROVE_OK);
    trove_store_close(s);
    snprintf(c->live, sizeof c->live, "live");
    snprintf(label, sizeof label, "%s, append", what);
    sweep(label, op_capture_live, check_capture_live, c);
    snprintf(c->live, sizeof c->live, "fresh");
    snprintf(label, sizeof label, "%s, new", what);
    sweep(label, op_capture_live, check_capture_live, c);
}

static int replay_send(void *ctx, const struct trove_stream_batch *b)
{
    uint64_t *events = ctx;
    *events += b->events;
    return TROVE_OK;
}

static int op_capture_replay(void *p)
{
    struct store_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_stream *st = NULL;
    struct trove_stream_options so;
    struct trove_capture_replay_options ro = {.to_ns = UINT64_MAX, .wire = TROVE_WIRE_PACKED};
    uint64_t events = 0;
    struct trove_stream_sink sink = {.send = replay_send, .ctx = &events};
    int rc = trove_store_open(c->dir, TROVE_STORE_READONLY, &s, NULL);
    trove_stream_options_default(&so);
    so.send_mode = TROVE_STREAM_SEND_INLINE;
    if (rc == TROVE_OK)
        rc = trove_stream_new(trove_store_backend(s), &so, &st);
    if (rc == TROVE_OK)
        rc = trove_capture_replay(s, "cap", st, &ro, &sink, NULL, NULL);
    if (rc == TROVE_OK && events != gen_events.len)
        rc = TROVE_ERR_MISMATCH;
    trove_stream_free(st);
    trove_store_close(s);
    return rc;
}

/* ---- the profile model ----------------------------------------------------------------- */

/* A profile of 40 functions in 3 modules, 300 samples on paths through them. */
static int fill_profile(struct trove_profile *p)
{
    uint64_t seed = 7;
    int rc = TROVE_OK;
    for (int i = 0; i < 300 && rc == TROVE_OK; i++) {
        uint32_t frames[8], st = 0;
        size_t n = 1 + (size_t)(test_rand(&seed) % 8);
        for (size_t k = 0; k < n && rc == TROVE_OK; k++) {
            char fn[32], mod[32];
            uint64_t r = test_rand(&seed) % 40;
            struct trove_profile_frame f = {0, 0, 0, (uint32_t)r, r * 16, 0};
            snprintf(fn, sizeof fn, "function_%u", (unsigned)r);
            snprintf(mod, sizeof mod, "/lib/m%u.so", (unsigned)(r % 3));
            if ((rc = trove_profile_string(p, mod, strlen(mod), &f.module)) == TROVE_OK &&
                (rc = trove_profile_string(p, fn, strlen(fn), &f.function)) == TROVE_OK)
                rc = trove_profile_frame(p, &f, &frames[k]);
        }
        if (rc == TROVE_OK && (rc = trove_profile_stack_path(p, frames, n, &st)) == TROVE_OK) {
            struct trove_profile_sample s = {(uint64_t)i, 1, 2, st};
            rc = trove_profile_sample(p, &s);
        }
    }
    return rc;
}

struct profile_ctx {
    size_t frames, stacks, samples, funcs; /* of a run that did not fail */
    uint64_t top_self;
    struct trove_profile *kept; /* for the unchanged-on-failure case */
    size_t k_strings, k_frames, k_stacks, k_samples;
    size_t done; /* op_profile_add: items added whole, and the stage it stopped at */
    int stage;
};

static int op_profile(void *p)
{
    struct profile_ctx *c = p;
    struct trove_profile *pr = NULL;
    struct trove_profile_func *top = NULL;
    size_t n = 0;
    int rc = trove_profile_new(&pr);
    if (rc == TROVE_OK)
        rc = fill_profile(pr);
    if (rc == TROVE_OK)
        rc = trove_profile_top(pr, 0, UINT64_MAX, &top, &n, NULL);
    if (rc == TROVE_OK) {
        c->frames = trove_profile_frame_count(pr);
        c->stacks = trove_profile_stack_count(pr);
        c->samples = trove_profile_sample_count(pr);
        c->funcs = n;
        c->top_self = n ? top[0].self : 0;
    }
    free(top);
    trove_profile_free(pr);
    return rc;
}

static int check_profile(void *p, int rc)
{
    struct profile_ctx *c = p;
    if (rc != TROVE_OK)
        return 1; /* the op freed what it made: a leak would show under ASan */
    return c->frames == 40 && c->samples == 300 && c->funcs == 40 && c->top_self > 0;
}

/* 200 more strings, frames, stacks and samples into a profile that holds some: each add
 * all or nothing, so the counts say exactly how far the run got. */
static int op_profile_add(void *p)
{
    struct profile_ctx *c = p;
    c->done = 0;
    c->stage = 0;
    for (uint32_t j = 0; j < 200; j++) {
        char name[32];
        struct trove_profile_frame f = {0, 0, 0, 1, 0x100000 + j, 0};
        struct trove_profile_sample s = {j, 1, 1, 0};
        uint32_t id;
        int rc;
        snprintf(name, sizeof name, "added_%u", (unsigned)j);
        c->stage = 0;
        if ((rc = trove_profile_string(c->kept, name, strlen(name), &f.function)) != TROVE_OK)
            return rc;
        c->stage = 1;
        if ((rc = trove_profile_frame(c->kept, &f, &id)) != TROVE_OK)
            return rc;
        c->stage = 2;
        if ((rc = trove_profile_stack(c->kept, TROVE_PROFILE_ROOT, id, &s.stack)) != TROVE_OK)
            return rc;
        c->stage = 3;
        if ((rc = trove_profile_sample(c->kept, &s)) != TROVE_OK)
            return rc;
        c->done++;
    }
    return TROVE_OK;
}

static int check_profile_add(void *p, int rc)
{
    struct profile_ctx *c = p;
    size_t d = c->done, g = rc == TROVE_OK ? 0 : (size_t)c->stage;
    int ok = trove_profile_string_count(c->kept) == c->k_strings + d + (g > 0) &&
             trove_profile_frame_count(c->kept) == c->k_frames + d + (g > 1) &&
             trove_profile_stack_count(c->kept) == c->k_stacks + d + (g > 2) &&
             trove_profile_sample_count(c->kept) == c->k_samples + d;
    /* Back to the state before, for the next run. */
    trove_profile_free(c->kept);
    c->kept = NULL;
    if (trove_profile_new(&c->kept) != TROVE_OK || fill_profile(c->kept) != TROVE_OK)
        return 0;
    return ok;
}

struct sprof_ctx {
    struct trove_sample_set *set;
    size_t frames, stacks, samples;
};

static int op_sample_profile(void *p)
{
    struct sprof_ctx *c = p;
    struct trove_symbolizer *sym = NULL;
    struct trove_profile *pr = NULL;
    int rc = trove_symbolizer_new(&sym);
    if (rc == TROVE_OK)
        rc = trove_profile_new(&pr);
    if (rc == TROVE_OK)
        rc = trove_sample_profile(sym, c->set, pr);
    if (rc == TROVE_OK) {
        c->frames = trove_profile_frame_count(pr);
        c->stacks = trove_profile_stack_count(pr);
        c->samples = trove_profile_sample_count(pr);
    }
    trove_profile_free(pr);
    trove_symbolizer_free(sym);
    return rc;
}

static int check_sample_profile(void *p, int rc)
{
    struct sprof_ctx *c = p;
    if (rc != TROVE_OK)
        return 1;
    return c->frames == 12 && c->stacks == 12 && c->samples == 10;
}

static void test_profiles(void)
{
    struct profile_ctx c;
    struct sprof_ctx sc;
    uint32_t m1, m2;
    memset(&c, 0, sizeof c);
    sweep("profile model and top", op_profile, check_profile, &c);
    CHECK(trove_profile_new(&c.kept) == TROVE_OK && fill_profile(c.kept) == TROVE_OK);
    c.k_strings = trove_profile_string_count(c.kept);
    c.k_frames = trove_profile_frame_count(c.kept);
    c.k_stacks = trove_profile_stack_count(c.kept);
    c.k_samples = trove_profile_sample_count(c.kept);
    sweep("profile add, unchanged", op_profile_add, check_profile_add, &c);
    trove_profile_free(c.kept);

    /* Modules that are not there: symbolized as module + offset, without libdw's memory. */
    memset(&sc, 0, sizeof sc);
    CHECK(trove_sample_set_new(&sc.set) == TROVE_OK);
    CHECK(trove_sample_set_module(sc.set, "/nonexistent/a.so", NULL, 0, &m1) == TROVE_OK);
    CHECK(trove_sample_set_module(sc.set, "/nonexistent/b.so", NULL, 0, &m2) == TROVE_OK);
    for (uint32_t i = 0; i < 10; i++) {
        struct trove_sample_frame f[3] = {{m1, 0x100 + i}, {m2, 0x2001},
                                          {TROVE_SAMPLE_NO_MODULE, 0x77}};
        CHECK(trove_sample_set_add(sc.set, 100 - i, 1, 1, f, 3) == TROVE_OK);
    }
    sweep("sample set into a profile", op_sample_profile, check_sample_profile, &sc);
    trove_sample_set_free(sc.set);
}

static void test_store(void)
{
    struct store_ctx c;
    struct trove_store *s = NULL;
    struct trove_volume *v = NULL;
    struct trove_names *half = NULL;

    memset(&c, 0, sizeof c);
    snprintf(c.dir, sizeof c.dir, "%s/store", tmpdir);
    for (size_t i = 0; i < sizeof vold; i++) {
        vold[i] = (uint8_t)(i * 7 + (i >> 12));
        vnew[i] = (uint8_t)(i >> 12) == 3 || (uint8_t)(i >> 12) == 17 ? (uint8_t)(i * 13) : vold[i];
    }
    CHECK_EQ_INT(trove_store_open(c.dir, TROVE_STORE_CREATE | TROVE_STORE_NOSYNC, &s, NULL),
                 TROVE_OK);
    CHECK_EQ_INT(trove_volume_create(s, "vol", sizeof vold, VBLOCK, &v, NULL), TROVE_OK);
    trove_volume_close(v);
    trove_store_close(s);
    CHECK_EQ_INT(volume_put(c.dir, vold), TROVE_OK);
    CHECK(volume_equals(c.dir, vold));
    sweep("volume commit", op_volume_commit, check_volume_commit, &c);
    CHECK_EQ_INT(garbage_put(c.dir), TROVE_OK);
    sweep("store gc", op_gc, check_gc, &c);
    sweep("capture import", op_capture_write, check_capture_write, &c);
    for (size_t i = 0; i < gen_events.len; i += 10) {
        struct trove_flow f = {gen_events.ev[i].start_ns, 1 + i / 30, gen_events.ev[i].pid,
                               gen_events.ev[i].tid, 0, (uint8_t)(i / 10 % 3), 1, {0, 0}};
        CHECK_EQ_INT(trove_flows_push(&cap_flows, &f), TROVE_OK);
    }
    sweep("capture import, flows", op_capture_write_flows, check_capture_write, &c);
    CHECK_EQ_INT(op_capture_write_flows(&c), TROVE_OK);
    sweep("capture flows read", op_capture_read_flows, NULL, &c);
    CHECK_EQ_INT(op_capture_write(&c), TROVE_OK);
    sweep("capture replay", op_capture_replay, NULL, &c);
    sweep_live(&c, "capture live writer");
    /* Names in parts (cut small: 20-odd parts of gen's names): the import, and the live
     * writer's append (which reads parts back and puts the last again) and new capture. */
    trove_testing_capture_names_cut(64, 200);
    sweep("capture import, names parts", op_capture_write, check_capture_write, &c);
    CHECK_EQ_INT(op_capture_write(&c), TROVE_OK); /* what the live writer's must equal */
    {
        struct trove_capture_info info;
        CHECK_EQ_INT(trove_store_open(c.dir, TROVE_STORE_READONLY, &s, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_capture_info(s, "cap", &info, NULL), TROVE_OK);
        CHECK(info.flags & TROVE_CAPTURE_FLAG_NAMES_PARTS);
        trove_store_close(s);
    }
    CHECK_EQ_INT(trove_names_new(&half), TROVE_OK);
    for (size_t i = 0; half && i < trove_names_count(gen_names) / 2; i++) {
        struct trove_name_entry e;
        trove_names_entry(gen_names, i, &e);
        CHECK_EQ_INT(trove_names_put(half, &e), TROVE_OK);
    }
    c.live_names = half;
    sweep_live(&c, "capture live writer, names parts");
    trove_testing_capture_names_cut(0, 0);
    trove_names_free(half);
    CHECK(store_clean(c.dir));
    trove_flows_free(&cap_flows);
}

static void test_generator(const struct trove_gen_options *g)
{
    struct gen_ctx gc = {.g = *g};
    CHECK(trove_names_new(&gc.names) == TROVE_OK);
    sweep("generator", op_gen, check_gen, &gc);
    trove_events_free(&gc.ev);
    trove_names_free(gc.names);
}

int main(int argc, char **argv)
{
    struct trove_gen_options g;

    test_init(argc, argv);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    trove_gen_defaults(&g);
    g.events = 700;
    g.processes = 2;
    g.threads = 3;
    g.names = 50;
    CHECK(trove_names_new(&gen_names) == TROVE_OK);
    CHECK_EQ_INT(trove_gen(&g, &gen_events, gen_names), TROVE_OK);

    RUN(test_wire);
    RUN(test_chrome);
    RUN(test_trace);
    RUN_WITH(test_generator, &g);
    RUN(test_formats);
    RUN(test_columnar);
    RUN(test_profile);
    RUN(test_profiles);
    RUN(test_store);

    trove_events_free(&gen_events);
    trove_names_free(gen_names);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        trove_bytes_free(&tab_want[t]);
    test_rm_rf(tmpdir);
    return test_done();
}
