/*
 * test_chrome_attrs.c: what a Chrome trace's events carry besides times and names — args,
 * categories, other members, the top-level members — imported as attribute rows on the
 * events they become (every value type, B/E and b/e merged, a counter's categories), what is
 * still not kept counted, written back by the export and imported again the same, and an
 * error that leaves the tables as they were (docs/formats/chrome-json.md, "Attributes").
 */
#include "testutil.h"

#include "trove/attrs.h"
#include "trove/chrome.h"
#include "trove/tables.h"
#include "trove/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct result {
    int rc;
    struct trove_events ev;
    struct trove_flows flows;
    struct trove_names *names;
    struct trove_chrome_stats st;
    struct trove_diag diag;
};

static void result_free(struct result *r)
{
    trove_events_free(&r->ev);
    trove_flows_free(&r->flows);
    trove_names_free(r->names);
    memset(r, 0, sizeof *r);
}

/* The row of event ev with key k (NULL: none). */
static const struct trove_attr *row_of(const struct trove_attrs *a, uint64_t ev, const char *k)
{
    for (size_t i = 0; i < a->n; i++) {
        size_t len;
        const char *key = trove_attrs_string(a, a->rows[i].key, &len);
        if (a->rows[i].event == ev && len == strlen(k) && !memcmp(key, k, len))
            return &a->rows[i];
    }
    return NULL;
}

static int row_str(const struct trove_attrs *a, const struct trove_attr *r, const char *want)
{
    size_t len;
    const char *v = r ? trove_attrs_string(a, r->v.s, &len) : NULL;
    return v && len == strlen(want) && !memcmp(v, want, len);
}

/* With opt.attrs: args, cat and the other members of every event that becomes one, each as
 * the type its JSON value has, on the event's index after the sort; the top-level members
 * in meta; what even they miss counted. Exported back, each comes back as it was. */
static void test_attrs(void)
{
    static const char doc[] =
        "{\"displayTimeUnit\":\"ms\",\"traceEvents\":["
        "{\"ph\":\"X\",\"name\":\"late\",\"cat\":\"blink\",\"ts\":50,\"dur\":2,\"pid\":1,\"tid\":1,"
        "\"tts\":5,\"tdur\":1.5,\"args\":{\"url\":\"x\\u00e9\",\"n\":-3,\"big\":18446744073709551615,"
        "\"f\":0.25,\"t\":true,\"z\":null,\"o\":{ \"k\" : [1, \"a\\\"b\", 2.5e3] }}},"
        "{\"ph\":\"B\",\"name\":\"be\",\"cat\":\"v8\",\"ts\":1,\"pid\":1,\"tid\":1,\"args\":{\"b\":1,\"k\":1}},"
        "{\"ph\":\"E\",\"ts\":9,\"pid\":1,\"tid\":1,\"args\":{\"e\":2,\"k\":2}},"
        "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"main\",\"x\":1}},"
        "{\"ph\":\"C\",\"name\":\"mem\",\"cat\":\"m\",\"ts\":3,\"pid\":1,\"args\":{\"used\":7,\"free\":2,\"label\":\"z\"}},"
        "{\"ph\":\"b\",\"name\":\"span\",\"cat\":\"net\",\"id\":\"0x1\",\"ts\":20,\"pid\":1,\"tid\":1,\"args\":{\"req\":\"r\"}},"
        "{\"ph\":\"e\",\"name\":\"span\",\"cat\":\"net\",\"id\":\"0x1\",\"ts\":30,\"pid\":1,\"tid\":1,\"args\":{\"status\":200}},"
        "{\"ph\":\"s\",\"name\":\"fl\",\"cat\":\"f\",\"id\":7,\"ts\":2,\"pid\":1,\"tid\":1,\"args\":{\"q\":1}},"
        "{\"ph\":\"i\",\"name\":\"mark\",\"ts\":40,\"pid\":1,\"tid\":1,\"s\":\"p\",\"sf\":3}"
        "],\"metadata\":{\"v\":[1,{}]}}";
    struct trove_chrome_options opt = {0};
    struct trove_attrs a, meta;
    struct result r;
    const struct trove_attr *x;
    uint64_t late = 99, be = 99, span = 99, mark = 99, mem[2] = {99, 99};
    size_t nmem = 0;

    memset(&a, 0, sizeof a);
    memset(&meta, 0, sizeof meta);
    opt.attrs = &a;
    opt.meta = &meta;
    memset(&r, 0, sizeof r);
    if (trove_names_new(&r.names) != TROVE_OK)
        abort();
    r.rc = trove_chrome_import_all_mem((const uint8_t *)doc, sizeof doc - 1, &opt, &r.ev, r.names,
                                       &r.flows, &r.st, &r.diag);
    CHECK_EQ_INT(r.rc, TROVE_OK);
    CHECK_EQ_INT(r.ev.len, 6);
    for (size_t i = 0; i < r.ev.len; i++) {
        size_t len;
        const char *n = trove_names_get(r.names, TROVE_NAME_EVENT, r.ev.ev[i].name_id, 0, &len);
        if (!strcmp(n, "late"))
            late = i;
        else if (!strcmp(n, "be"))
            be = i;
        else if (!strcmp(n, "span"))
            span = i;
        else if (!strcmp(n, "mark"))
            mark = i;
        else if (!strcmp(n, "mem") && nmem < 2)
            mem[nmem++] = i;
    }
    CHECK(late == 5 && be == 0 && nmem == 2);
    /* every type */
    CHECK((x = row_of(&a, late, "url")) && x->type == TROVE_ATTR_STRING && x->scope == TROVE_ATTR_ARG &&
          row_str(&a, x, "x\xc3\xa9"));
    CHECK((x = row_of(&a, late, "n")) && x->type == TROVE_ATTR_INT && x->v.i == -3);
    CHECK((x = row_of(&a, late, "big")) && x->type == TROVE_ATTR_JSON &&
          row_str(&a, x, "18446744073709551615"));
    CHECK((x = row_of(&a, late, "f")) && x->type == TROVE_ATTR_DOUBLE && x->v.d == 0.25);
    CHECK((x = row_of(&a, late, "t")) && x->type == TROVE_ATTR_BOOL && x->v.b == 1);
    CHECK((x = row_of(&a, late, "z")) && x->type == TROVE_ATTR_JSON && row_str(&a, x, "null"));
    CHECK((x = row_of(&a, late, "o")) && x->type == TROVE_ATTR_JSON &&
          row_str(&a, x, "{\"k\":[1,\"a\\\"b\",0.25e4]}"));
    CHECK((x = row_of(&a, late, "cat")) && x->scope == TROVE_ATTR_FIELD && row_str(&a, x, "blink"));
    CHECK((x = row_of(&a, late, "tts")) && x->scope == TROVE_ATTR_FIELD && x->v.i == 5);
    CHECK((x = row_of(&a, late, "tdur")) && x->type == TROVE_ATTR_DOUBLE && x->v.d == 1.5);
    /* B and E: both events' rows on the zone; an async span: its begin's and its end's */
    CHECK((x = row_of(&a, be, "b")) && x->v.i == 1);
    CHECK((x = row_of(&a, be, "e")) && x->v.i == 2);
    CHECK(row_str(&a, row_of(&a, be, "cat"), "v8"));
    {   /* a key both had: once, the E's value, as Chrome merges them */
        size_t nk = 0;
        for (size_t i = 0; i < a.n; i++)
            nk += a.rows[i].event == be && a.rows[i].key == row_of(&a, be, "k")->key;
        CHECK(nk == 1 && row_of(&a, be, "k")->v.i == 2);
    }
    CHECK((x = row_of(&a, span, "req")) && row_str(&a, x, "r"));
    CHECK((x = row_of(&a, span, "status")) && x->v.i == 200);
    CHECK((x = row_of(&a, mark, "sf")) && x->scope == TROVE_ATTR_FIELD && x->v.i == 3);
    /* a counter: its category on each of its values, its args are its values */
    CHECK(row_str(&a, row_of(&a, mem[0], "cat"), "m") && row_str(&a, row_of(&a, mem[1], "cat"), "m"));
    CHECK(!row_of(&a, mem[0], "used") && !row_of(&a, mem[0], "label"));
    /* rows in event order */
    for (size_t i = 1; i < a.n; i++)
        CHECK(a.rows[i].event >= a.rows[i - 1].event);
    CHECK_EQ_INT(r.st.attr_rows, a.n);
    /* the trace's members */
    CHECK_EQ_INT(meta.n, 2);
    CHECK(row_str(&meta, row_of(&meta, 0, "displayTimeUnit"), "ms"));
    CHECK((x = row_of(&meta, 0, "metadata")) && x->scope == TROVE_ATTR_TRACE &&
          row_str(&meta, x, "{\"v\":[1,{}]}"));
    /* what is still not kept: the M's x, the C's label, the flow's q and its category */
    CHECK_EQ_INT(r.st.args_events, 3);
    CHECK_EQ_INT(r.st.args_members, 3);
    CHECK_EQ_INT(r.st.cat_events, 1);
    CHECK_EQ_INT(r.st.other_members, 0);
    CHECK_EQ_INT(r.st.top_members, 0);

    /* exported and imported again: the same rows on the same events */
    {
        struct trove_trace t = {r.ev.ev, r.ev.len, r.names, r.flows.f, r.flows.len, &a, &meta};
        struct trove_bytes out = {0};
        struct trove_attrs a2, m2;
        struct result r2;
        memset(&a2, 0, sizeof a2);
        memset(&m2, 0, sizeof m2);
        CHECK_EQ_INT(trove_chrome_export(&t, &out, NULL), TROVE_OK);
        CHECK(strstr((const char *)out.ptr, "{\"displayTimeUnit\":\"ms\",\"metadata\":{\"v\":[1,{}]},") != NULL);
        opt.attrs = &a2;
        opt.meta = &m2;
        memset(&r2, 0, sizeof r2);
        if (trove_names_new(&r2.names) != TROVE_OK)
            abort();
        r2.rc = trove_chrome_import_all_mem(out.ptr, out.len, &opt, &r2.ev, r2.names, &r2.flows,
                                            &r2.st, &r2.diag);
        CHECK_EQ_INT(r2.rc, TROVE_OK);
        CHECK_EQ_INT(r2.ev.len, r.ev.len);
        CHECK_EQ_INT(a2.n, a.n);
        CHECK_EQ_INT(m2.n, meta.n);
        /* each row back on its event (a span's order within the event may differ: its
         * begin's fields, its args, then its end's) */
        for (size_t i = 0; i < a.n; i++) {
            const struct trove_attr *p = &a.rows[i], *q = NULL;
            size_t l1, l2;
            const char *k1 = trove_attrs_string(&a, p->key, &l1);
            for (size_t j = 0; j < a2.n && !q; j++) {
                const char *k2 = trove_attrs_string(&a2, a2.rows[j].key, &l2);
                if (a2.rows[j].event == p->event && a2.rows[j].scope == p->scope && l1 == l2 &&
                    !memcmp(k1, k2, l1))
                    q = &a2.rows[j];
            }
            CHECK(q != NULL);
            if (!q)
                continue;
            CHECK(p->type == q->type);
            if (p->type == TROVE_ATTR_STRING || p->type == TROVE_ATTR_JSON) {
                const char *v1 = trove_attrs_string(&a, p->v.s, &l1), *v2 = trove_attrs_string(&a2, q->v.s, &l2);
                CHECK(l1 == l2 && !memcmp(v1, v2, l1));
            } else if (p->type == TROVE_ATTR_DOUBLE) {
                CHECK(p->v.d == q->v.d);
            } else if (p->type == TROVE_ATTR_INT) {
                CHECK(p->v.i == q->v.i);
            } else {
                CHECK(p->v.b == q->v.b);
            }
        }
        trove_bytes_free(&out);
        trove_attrs_free(&a2);
        trove_attrs_free(&m2);
        result_free(&r2);
    }

    /* through Perfetto: the events' rows as debug annotations and categories, back the same
     * (a JSON number's digits come back as JSON); the trace's rows have no place there */
    {
        struct trove_trace t = {r.ev.ev, r.ev.len, r.names, r.flows.f, r.flows.len, &a, &meta};
        struct trove_perfetto_options po = {0, 0, NULL, NULL};
        struct trove_bytes pb = {0};
        struct trove_events ev2 = {0};
        struct trove_attrs a2;
        struct trove_perfetto_stats pst;
        memset(&a2, 0, sizeof a2);
        po.attrs = &a2;
        CHECK_EQ_INT(trove_perfetto_write(&t, &pb, NULL), TROVE_OK);
        CHECK_EQ_INT(trove_perfetto_read(pb.ptr, pb.len, &po, &ev2, NULL, NULL, &pst, NULL),
                     TROVE_OK);
        CHECK_EQ_INT(ev2.len, r.ev.len);
        CHECK(trove_attrs_equal(&a, &a2));
        CHECK_EQ_INT(pst.attr_rows, a.n);
        CHECK(pst.annotations == 0 && pst.category_events == 0 && pst.log_messages == 0);
        trove_bytes_free(&pb);
        trove_events_free(&ev2);
        trove_attrs_free(&a2);
    }

    /* an error leaves the tables as they were */
    {
        size_t n0 = a.n, m0 = meta.n;
        struct result r3;
        opt.attrs = &a;
        opt.meta = &meta;
        memset(&r3, 0, sizeof r3);
        static const char cut[] = "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,\"pid\":1,"
                                  "\"tid\":1,\"args\":{\"k\":1}},{\"ph\":";
        r3.rc = trove_chrome_import_all_mem((const uint8_t *)cut, sizeof cut - 1, &opt, &r3.ev,
                                            NULL, NULL, &r3.st, &r3.diag);
        CHECK(r3.rc != TROVE_OK);
        CHECK_EQ_INT(a.n, n0);
        CHECK_EQ_INT(meta.n, m0);
        result_free(&r3);
    }
    trove_attrs_free(&a);
    trove_attrs_free(&meta);
    result_free(&r);
}

/* A key or string that is not UTF-8 is kept made valid (a bad byte U+FFFD), as names are, so
 * that every writer of rows can hold it: the args table writes it and reads it back. */
static void test_attrs_utf8(void)
{
    static const char doc[] = "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,\"pid\":1,"
                              "\"tid\":1,\"args\":{\"k\xff\":\"v\xc3\"}}]";
    struct trove_chrome_options opt = {0};
    struct trove_attrs a, back;
    struct trove_events ev = {0};
    struct trove_bytes t = {0};
    const char *k, *v;

    memset(&a, 0, sizeof a);
    memset(&back, 0, sizeof back);
    opt.attrs = &a;
    CHECK_EQ_INT(trove_chrome_import_mem((const uint8_t *)doc, sizeof doc - 1, &opt, &ev, NULL,
                                         NULL, NULL),
                 TROVE_OK);
    CHECK_EQ_INT(a.n, 1);
    if (a.n == 1) {
        k = trove_attrs_string(&a, a.rows[0].key, NULL);
        v = trove_attrs_string(&a, a.rows[0].v.s, NULL);
        CHECK(!strcmp(k, "k\xef\xbf\xbd") && !strcmp(v, "v\xef\xbf\xbd"));
    }
    CHECK_EQ_INT(trove_tables_write_args(&a, NULL, NULL, &t, NULL), TROVE_OK);
    CHECK_EQ_INT(trove_tables_read_args(t.ptr, t.len, 1, &back, NULL, NULL), TROVE_OK);
    CHECK(trove_attrs_equal(&a, &back));
    trove_attrs_free(&a);
    trove_attrs_free(&back);
    trove_events_free(&ev);
    trove_bytes_free(&t);
}


int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_attrs);
    RUN(test_attrs_utf8);
    return test_done();
}
