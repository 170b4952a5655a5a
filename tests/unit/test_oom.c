/*
 * test_oom.c: every encoder and decoder survives running out of memory at any allocation
 * (the sweep of oom_test.h: allocation N fails, for every N, and the operation fails cleanly
 * with its outputs as they were, or copes and gives exactly the unhindered result).
 *
 * Covered: the wire encoder and decoder (raw, packed, deflate, columnar, names), the Chrome JSON
 * importer (from memory and streamed from a file, through the JSON tokenizer's window), the
 * generator, recipe v1 and v3 encode and decode, the capture header, Parquet tables written
 * and read, the bundle manifest, a bundle written to a file and read back; and the trace
 * interchange: the Chrome importer on async spans, flows and counters, the Chrome JSON and
 * Perfetto writers (whole, and streamed through sorted runs spilled to disk and merged), the
 * Perfetto reader, the flows object encoded and decoded, the flows table written and read;
 * and the streamed export's writers: the events table in pieces through a deflating bundle
 * entry encoder, and the bundle written front to back; the events' attributes (the Chrome
 * and Perfetto importers keeping them, the exports writing them back, the args table written
 * and read, rows moved between tables). The store is test_oom_store.c's, the profile
 * test_oom_profile.c's.
 */

#include "testutil.h"
#include "oom_test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trove/attrs.h"
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

static char tmpdir[] = "/tmp/trove_oom_XXXXXX";
static struct trove_events gen_events;
static struct trove_names *gen_names;

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
                                  TROVE_WIRE_COLUMNAR, TROVE_WIRE_COLUMNAR_DEFLATE,
                                  TROVE_WIRE_MODEL, -1};
    static const char *const label[] = {"wire encode raw", "wire encode packed",
                                        "wire encode deflate", "wire encode columnar",
                                        "wire encode columnar_deflate", "wire encode model",
                                        "wire encode names"};
    static const char *const dlabel[] = {"wire decode raw", "wire decode packed",
                                         "wire decode deflate", "wire decode columnar",
                                         "wire decode columnar_deflate", "wire decode model",
                                         "wire decode names"};
    for (size_t i = 0; i < 7; i++) {
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
                            c->want_flows.len, NULL, NULL};
    return t;
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
        if (!TROVE_TABLE_IS_PROFILE(t) && t != TROVE_TABLE_ARGS) /* read by their own */
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

static void test_generator(const struct trove_gen_options *g)
{
    struct gen_ctx gc = {.g = *g};
    CHECK(trove_names_new(&gc.names) == TROVE_OK);
    sweep("generator", op_gen, check_gen, &gc);
    trove_events_free(&gc.ev);
    trove_names_free(gc.names);
}

/* ---- the events' attributes ------------------------------------------------------------ */

static const char attrs_doc[] =
    "{\"metadata\":{\"a\":[1,2]},\"traceEvents\":["
    "{\"ph\":\"X\",\"name\":\"task\",\"cat\":\"c\",\"pid\":1,\"tid\":7,\"ts\":1,\"dur\":50,"
    "\"tts\":3,\"args\":{\"url\":\"u\",\"n\":2,\"o\":{\"k\":[true,null]}}},"
    "{\"ph\":\"B\",\"name\":\"b\",\"pid\":1,\"tid\":7,\"ts\":2,\"args\":{\"k\":1}},"
    "{\"ph\":\"E\",\"pid\":1,\"tid\":7,\"ts\":3,\"args\":{\"k\":2,\"f\":0.5}},"
    "{\"ph\":\"b\",\"name\":\"s\",\"cat\":\"n\",\"pid\":1,\"ts\":4,\"id\":1,\"args\":{\"r\":\"x\"}},"
    "{\"ph\":\"e\",\"name\":\"s\",\"cat\":\"n\",\"pid\":1,\"ts\":9,\"id\":1},"
    "{\"ph\":\"C\",\"name\":\"mem\",\"cat\":\"m\",\"pid\":1,\"ts\":5,\"args\":{\"heap\":7}}]}";

struct attrs_ctx {
    struct trove_events ev, want_ev;
    struct trove_attrs a, m, want_a, want_m;
    struct trove_bytes out, want_out;
};

static int op_attrs_import(void *p)
{
    struct attrs_ctx *c = p;
    struct trove_chrome_options o = {0};
    o.attrs = &c->a;
    o.meta = &c->m;
    return trove_chrome_import_mem((const uint8_t *)attrs_doc, sizeof attrs_doc - 1, &o, &c->ev,
                                   NULL, NULL, NULL);
}

static int check_attrs_import(void *p, int rc)
{
    struct attrs_ctx *c = p;
    int ok = rc == TROVE_OK ? c->ev.len == c->want_ev.len && c->a.n == c->want_a.n &&
                                  c->m.n == c->want_m.n
                            : c->ev.len == 0 && c->a.n == 0 && c->m.n == 0;
    c->ev.len = 0;
    trove_attrs_free(&c->a);
    trove_attrs_free(&c->m);
    return ok;
}

static int op_attrs_export(void *p)
{
    struct attrs_ctx *c = p;
    struct trove_trace t = {c->want_ev.ev, c->want_ev.len, NULL, NULL, 0, &c->want_a, &c->want_m};
    return trove_chrome_export(&t, &c->out, NULL);
}

/* Failed: nothing written; else the unhindered bytes. */
static int check_out(void *p, int rc)
{
    struct attrs_ctx *c = p;
    int ok = rc == TROVE_OK ? c->out.len == c->want_out.len &&
                                  !memcmp(c->out.ptr, c->want_out.ptr, c->out.len)
                            : c->out.len == 0;
    c->out.len = 0;
    return ok;
}

static int op_attrs_perfetto(void *p)
{
    struct attrs_ctx *c = p;
    struct trove_trace t = {c->want_ev.ev, c->want_ev.len, NULL, NULL, 0, &c->want_a, NULL};
    return trove_perfetto_write(&t, &c->out, NULL);
}

static int op_attrs_perfetto_read(void *p)
{
    struct attrs_ctx *c = p;
    struct trove_perfetto_options o = {0, 0, NULL, NULL};
    o.attrs = &c->a;
    return trove_perfetto_read(c->want_out.ptr, c->want_out.len, &o, &c->ev, NULL, NULL, NULL,
                               NULL);
}

static int check_pf_read(void *p, int rc)
{
    struct attrs_ctx *c = p;
    int ok = rc == TROVE_OK ? c->ev.len == c->want_ev.len && c->a.n == c->want_a.n
                            : c->ev.len == 0 && c->a.n == 0;
    c->ev.len = 0;
    trove_attrs_free(&c->a);
    return ok;
}

static int op_args_write(void *p)
{
    struct attrs_ctx *c = p;
    return trove_tables_write_args(&c->want_a, &c->want_m, NULL, &c->out, NULL);
}

static int op_args_read(void *p)
{
    struct attrs_ctx *c = p;
    return trove_tables_read_args(c->want_out.ptr, c->want_out.len, c->want_ev.len, &c->a, &c->m,
                                  NULL);
}

static int check_rows(void *p, int rc)
{
    struct attrs_ctx *c = p;
    int ok = rc == TROVE_OK ? c->a.n == c->want_a.n && c->m.n == c->want_m.n
                            : c->a.n == 0 && c->m.n == 0;
    trove_attrs_free(&c->a);
    trove_attrs_free(&c->m);
    return ok;
}

static int op_attrs_append(void *p)
{
    struct attrs_ctx *c = p;
    return trove_attrs_append(&c->a, &c->want_a, 0, c->want_a.n, 5, 0);
}

static int check_append(void *p, int rc)
{
    struct attrs_ctx *c = p;
    int ok = rc == TROVE_OK ? c->a.n == c->want_a.n && c->a.rows[0].event == 5 : c->a.n == 0;
    trove_attrs_free(&c->a);
    return ok;
}

static int op_attrs_wire(void *p)
{
    struct attrs_ctx *c = p;
    return trove_attrs_wire_encode(&c->want_a, &c->out);
}

static int op_attrs_wire_read(void *p)
{
    struct attrs_ctx *c = p;
    return trove_attrs_wire_decode(c->want_out.ptr, c->want_out.len, &c->a, NULL);
}

static int check_wire_read(void *p, int rc)
{
    struct attrs_ctx *c = p;
    int ok = rc == TROVE_OK ? trove_attrs_equal(&c->a, &c->want_a) : c->a.n == 0 && !c->a.rows;
    trove_attrs_free(&c->a);
    return ok;
}

static int op_attrs_json(void *p)
{
    struct attrs_ctx *c = p;
    return trove_attrs_json(&c->want_a, 0, c->want_a.n, &c->out);
}

static int op_gen_attrs(void *p)
{
    struct attrs_ctx *c = p;
    return trove_gen_attrs(gen_events.ev, gen_events.len, 0, 0, &c->a);
}

static int check_gen_attrs(void *p, int rc)
{
    struct attrs_ctx *c = p;
    struct trove_attrs want = {0};
    int ok;
    if (rc != TROVE_OK) {
        ok = c->a.n == 0;
    } else {
        trove_testing_alloc_fail_at(0, 0);
        ok = trove_gen_attrs(gen_events.ev, gen_events.len, 0, 0, &want) == TROVE_OK &&
             want.n > 0 && trove_attrs_equal(&c->a, &want);
    }
    trove_attrs_free(&want);
    trove_attrs_free(&c->a);
    return ok;
}

/* The live writer's attributes: every event of the generator with its rows, in segments
 * small enough that several fill, then a commit. */
static int op_writer_attrs(void *p)
{
    struct attrs_ctx *c = p;
    struct trove_store *s = NULL;
    struct trove_capture_writer *w = NULL;
    struct trove_capture_options co = {0};
    char dir[sizeof tmpdir + 32];
    int rc;

    co.segment_bytes = 64 * TROVE_EVENT_SIZE;
    co.frame_events = 16;
    snprintf(dir, sizeof dir, "%s/wa", tmpdir);
    test_rm_rf(dir);
    if ((rc = trove_store_open(dir, TROVE_STORE_CREATE, &s, NULL)) != TROVE_OK)
        return rc;
    if ((rc = trove_capture_writer_open(s, "wa", 0, &co, &w, NULL)) == TROVE_OK &&
        (rc = trove_capture_writer_names(w, gen_names, NULL)) == TROVE_OK &&
        (rc = trove_capture_writer_add_attrs(w, gen_events.ev, gen_events.len, &c->want_a, NULL)) ==
            TROVE_OK)
        rc = trove_capture_writer_commit(w, NULL, NULL);
    trove_capture_writer_close(w);
    if (rc == TROVE_OK) { /* what it committed reads back whole */
        trove_testing_alloc_fail_at(0, 0);
        rc = trove_capture_read_attrs(s, "wa", &c->a, NULL, NULL);
    }
    trove_store_close(s);
    return rc;
}

static int check_writer_attrs(void *p, int rc)
{
    struct attrs_ctx *c = p;
    int ok = rc != TROVE_OK || trove_attrs_equal(&c->a, &c->want_a);
    trove_attrs_free(&c->a);
    return ok;
}

/* op's output, made once, is what every run with an allocation failing must give (or leave
 * no output): kept in c->want_out for the readers swept after it. */
static void sweep_output(const char *what, op_fn op, struct attrs_ctx *c)
{
    trove_bytes_free(&c->want_out);
    CHECK_EQ_INT(op(c), TROVE_OK);
    c->want_out = c->out;
    memset(&c->out, 0, sizeof c->out);
    sweep(what, op, check_out, c);
}

static void test_attrs_oom(void)
{
    struct attrs_ctx c;
    struct trove_chrome_options o = {0};

    memset(&c, 0, sizeof c);
    o.attrs = &c.want_a;
    o.meta = &c.want_m;
    CHECK_EQ_INT(trove_chrome_import_mem((const uint8_t *)attrs_doc, sizeof attrs_doc - 1, &o,
                                         &c.want_ev, NULL, NULL, NULL),
                 TROVE_OK);
    CHECK(c.want_a.n >= 10 && c.want_m.n == 1);
    sweep("chrome json import, attributes", op_attrs_import, check_attrs_import, &c);
    sweep_output("chrome json export, attributes", op_attrs_export, &c);
    sweep_output("perfetto write, attributes", op_attrs_perfetto, &c);
    sweep("perfetto read, attributes", op_attrs_perfetto_read, check_pf_read, &c);
    sweep_output("args table write", op_args_write, &c);
    sweep("args table read", op_args_read, check_rows, &c);
    sweep("attribute rows appended", op_attrs_append, check_append, &c);
    sweep_output("attrs frame write", op_attrs_wire, &c);
    sweep("attrs frame read", op_attrs_wire_read, check_wire_read, &c);
    sweep_output("attributes as JSON", op_attrs_json, &c);
    sweep("generated attributes", op_gen_attrs, check_gen_attrs, &c);
    trove_attrs_free(&c.want_a); /* the generator's rows, for the writer */
    CHECK_EQ_INT(trove_gen_attrs(gen_events.ev, gen_events.len, 0, 0, &c.want_a), TROVE_OK);
    sweep("live writer, attributes", op_writer_attrs, check_writer_attrs, &c);
    trove_events_free(&c.ev);
    trove_events_free(&c.want_ev);
    trove_attrs_free(&c.want_a);
    trove_attrs_free(&c.want_m);
    trove_bytes_free(&c.out);
    trove_bytes_free(&c.want_out);
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
    RUN(test_attrs_oom);

    trove_events_free(&gen_events);
    trove_names_free(gen_names);
    for (int t = 0; t < TROVE_TABLE_COUNT_; t++)
        trove_bytes_free(&tab_want[t]);
    test_rm_rf(tmpdir);
    return test_done();
}
