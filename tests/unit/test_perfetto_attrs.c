/*
 * test_perfetto_attrs.c: what a Perfetto trace's track events carry besides times and names,
 * read as attribute rows (src/codec/perfetto_args.c; docs/formats/perfetto.md,
 * "Attributes"): debug annotations of every value form (a scalar as a typed row; a dict, an
 * array and a legacy nested value as JSON text, a legacy leaf as its typed row; an interned
 * string value by its iid), and what does not read counted, never an error. Each trace is
 * built by hand (perfetto_test.h) and is a seed of fuzz/corpus/fuzz_perfetto
 * (TROVE_PERFETTO_CORPUS=dir writes them).
 */
#include "testutil.h"
#include "perfetto_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trove/attrs.h"
#include "trove/trace.h"

/* A string field (wire type 2) of p. */
static void put_str(struct pb *p, uint32_t field, const char *s)
{
    struct pb m = {{0}, 0};
    memcpy(m.b, s, strlen(s));
    m.n = strlen(s);
    put_msg(p, field, &m);
}

static void put_double(struct pb *p, uint32_t field, double d)
{
    put_varint(p, (uint64_t)field << 3 | 1);
    memcpy(p->b + p->n, &d, 8);
    p->n += 8;
}

/* Row i of a: its key, and its value as text (a string's, or a number's digits). */
static int row_is(const struct trove_attrs *a, size_t i, const char *key, uint8_t type,
                  const char *value)
{
    char num[64];
    const char *k, *v = num;

    if (i >= a->n)
        return 0;
    k = trove_attrs_string(a, a->rows[i].key, NULL);
    if (a->rows[i].type != type || !k || strcmp(k, key) != 0)
        return 0;
    if (type == TROVE_ATTR_STRING || type == TROVE_ATTR_JSON)
        v = trove_attrs_string(a, a->rows[i].v.s, NULL);
    else if (type == TROVE_ATTR_INT)
        snprintf(num, sizeof num, "%lld", (long long)a->rows[i].v.i);
    else if (type == TROVE_ATTR_BOOL)
        snprintf(num, sizeof num, "%s", a->rows[i].v.b ? "true" : "false");
    else
        snprintf(num, sizeof num, "%g", a->rows[i].v.d);
    if (!v || strcmp(v, value) != 0)
        fprintf(stderr, "row %zu (%s): got %s, want %s\n", i, key, v ? v : "(none)", value);
    return v && strcmp(v, value) == 0;
}

/* A dict or array annotation is kept as its JSON text: {"a":-2,"b":[true,"x\"",0.5],"n":null}
 * (an entry without a value is null) and [7,null] (a NaN is null); a legacy nested value (8)
 * that is not a message is not, and is counted. */
static void test_perfetto_nested(void)
{
    struct pb p = {{0}, 0}, e = {{0}, 0}, pk = {{0}, 0}, top = {{0}, 0}, arr = {{0}, 0}, v[5];
    struct pb ea = {{0}, 0}, eb = {{0}, 0}, en = {{0}, 0}, old = {{0}, 0};
    struct trove_attrs a = {0};
    struct trove_perfetto_options opt = {0, 0, NULL, NULL};
    struct trove_perfetto_stats st;
    struct trove_events ev = {0};
    double dv[2] = {0.5, 0.0 / 0.0};
    size_t len;

    memset(v, 0, sizeof v);
    opt.attrs = &a;
    put_track(&p, 7, 0, 1, 1);
    memcpy(ea.b, "\x52\x01" "a", 3), ea.n = 3; /* name (10) "a" */
    put_uint(&ea, 4, (uint64_t)(int64_t)-2);
    memcpy(eb.b, "\x52\x01" "b", 3), eb.n = 3;
    put_uint(&v[0], 2, 1);
    memcpy(v[1].b, "\x32\x02x\"", 4), v[1].n = 4; /* string (6) x" */
    v[2].b[0] = v[4].b[0] = 0x29, v[2].n = v[4].n = 9; /* doubles (5) */
    memcpy(v[2].b + 1, &dv[0], 8), memcpy(v[4].b + 1, &dv[1], 8);
    for (int i = 0; i < 3; i++)
        put_msg(&eb, 12, &v[i]);
    memcpy(en.b, "\x52\x01" "n", 3), en.n = 3; /* an entry with no value */
    memcpy(top.b, "\x52\x01" "d", 3), top.n = 3;
    put_msg(&top, 11, &ea), put_msg(&top, 11, &eb), put_msg(&top, 11, &en);
    memcpy(arr.b, "\x52\x01" "l", 3), arr.n = 3;
    put_uint(&v[3], 3, 7);
    put_msg(&arr, 12, &v[3]), put_msg(&arr, 12, &v[4]);
    memcpy(old.b, "\x52\x01" "o", 3), old.n = 3;
    put_uint(&old, 8, 0); /* a legacy nested value, not a message: not kept */
    put_uint(&e, 9, 3), put_uint(&e, 11, 7);
    put_msg(&e, 4, &top), put_msg(&e, 4, &arr), put_msg(&e, 4, &old);
    put_uint(&pk, 8, 100), put_uint(&pk, 10, 1), put_msg(&pk, 11, &e);
    put_msg(&p, 1, &pk);
    CHECK_EQ_INT(trove_perfetto_read(p.b, p.n, &opt, &ev, NULL, NULL, &st, NULL), TROVE_OK);
    CHECK(ev.len == 1 && a.n == 2 && st.annotations == 1);
    for (size_t i = 0; i < a.n && i < 2; i++) {
        const char *d = trove_attrs_string(&a, a.rows[i].v.s, &len);
        CHECK(a.rows[i].type == TROVE_ATTR_JSON && d &&
              !strcmp(d, i ? "[7,null]" : "{\"a\":-2,\"b\":[true,\"x\\\"\",0.5],\"n\":null}"));
    }
    trove_attrs_free(&a);
    trove_events_free(&ev);
}


/*
 * Interned string values (DebugAnnotation 17, by iid in the sequence's InternedData
 * debug_annotation_string_values 29) and legacy nested values (DebugAnnotation 8,
 * NestedValue: nested_type 1, dict_keys 2, dict_values 3, array_values 4, int 5, double 6,
 * bool 7, string 8): kept as rows; an iid nobody interned and a dict key without its value
 * are not, and are counted.
 */
static void test_perfetto_interned_legacy(void)
{
    struct pb p = {{0}, 0}, pk = {{0}, 0}, in = {{0}, 0}, ent = {{0}, 0}, e = {{0}, 0};
    struct pb an[8], nv[8], tmp = {{0}, 0};
    struct trove_attrs a = {0};
    struct trove_perfetto_options opt = {0, 0, NULL, NULL};
    struct trove_perfetto_stats st;
    struct trove_events ev = {0};

    memset(an, 0, sizeof an);
    memset(nv, 0, sizeof nv);
    opt.attrs = &a;
    put_track(&p, 7, 0, 1, 1);
    /* interned: annotation name 1 "k", string value 5 "hello" */
    put_uint(&ent, 1, 1), put_str(&ent, 2, "k"), put_msg(&in, 3, &ent);
    memset(&ent, 0, sizeof ent);
    put_uint(&ent, 1, 5), put_str(&ent, 2, "hello"), put_msg(&in, 29, &ent);
    /* 0: k = "hello" by iid */
    put_uint(&an[0], 1, 1), put_uint(&an[0], 17, 5);
    /* not kept: an iid never interned */
    put_str(&an[1], 10, "u"), put_uint(&an[1], 17, 9);
    /* 1: d = {"s":"hello"}, the interned value inside a dict */
    put_str(&tmp, 10, "s"), put_uint(&tmp, 17, 5);
    put_str(&an[2], 10, "d"), put_msg(&an[2], 11, &tmp);
    /* 2: L = {"x":-3,"y":["q",1.5,true]}, a legacy dict holding an array */
    put_uint(&nv[0], 5, (uint64_t)(int64_t)-3);
    put_str(&nv[1], 8, "q");
    put_double(&nv[2], 6, 1.5);
    put_uint(&nv[3], 7, 1);
    put_uint(&nv[4], 1, 2);
    for (int i = 1; i < 4; i++)
        put_msg(&nv[4], 4, &nv[i]);
    put_uint(&nv[5], 1, 1);
    put_str(&nv[5], 2, "x"), put_str(&nv[5], 2, "y");
    put_msg(&nv[5], 3, &nv[0]), put_msg(&nv[5], 3, &nv[4]);
    put_str(&an[3], 10, "L"), put_msg(&an[3], 8, &nv[5]);
    /* 3: leaf = 42, a legacy leaf as its typed row; 4: sleaf = "q" */
    memset(&tmp, 0, sizeof tmp);
    put_uint(&tmp, 5, 42);
    put_str(&an[4], 10, "leaf"), put_msg(&an[4], 8, &tmp);
    put_str(&an[5], 10, "sleaf"), put_msg(&an[5], 8, &nv[1]);
    /* not kept: a legacy dict with a key and no value */
    memset(&tmp, 0, sizeof tmp);
    put_uint(&tmp, 1, 1), put_str(&tmp, 2, "x");
    put_str(&an[6], 10, "bad"), put_msg(&an[6], 8, &tmp);
    /* 5: mix = [7], a legacy leaf inside an array annotation */
    memset(&tmp, 0, sizeof tmp);
    put_uint(&nv[6], 5, 7), put_msg(&tmp, 8, &nv[6]);
    put_str(&an[7], 10, "mix"), put_msg(&an[7], 12, &tmp);
    put_uint(&e, 9, 3), put_uint(&e, 11, 7);
    for (int i = 0; i < 8; i++)
        put_msg(&e, 4, &an[i]);
    put_uint(&pk, 8, 100), put_uint(&pk, 10, 1), put_uint(&pk, 13, 1);
    put_msg(&pk, 12, &in), put_msg(&pk, 11, &e);
    put_msg(&p, 1, &pk);
    test_corpus_write("TROVE_PERFETTO_CORPUS", "attrs-interned-legacy", NULL, 0, p.b, p.n);
    CHECK_EQ_INT(trove_perfetto_read(p.b, p.n, &opt, &ev, NULL, NULL, &st, NULL), TROVE_OK);
    CHECK_EQ_INT(ev.len, 1);
    CHECK_EQ_INT(a.n, 6);
    CHECK_EQ_INT(st.annotations, 2);
    CHECK_EQ_INT(st.annotated_events, 1);
    CHECK(row_is(&a, 0, "k", TROVE_ATTR_STRING, "hello"));
    CHECK(row_is(&a, 1, "d", TROVE_ATTR_JSON, "{\"s\":\"hello\"}"));
    CHECK(row_is(&a, 2, "L", TROVE_ATTR_JSON, "{\"x\":-3,\"y\":[\"q\",1.5,true]}"));
    CHECK(row_is(&a, 3, "leaf", TROVE_ATTR_INT, "42"));
    CHECK(row_is(&a, 4, "sleaf", TROVE_ATTR_STRING, "q"));
    CHECK(row_is(&a, 5, "mix", TROVE_ATTR_JSON, "[7]"));
    /* read without attributes: the same events, the annotations counted */
    trove_events_free(&ev);
    opt.attrs = NULL;
    CHECK_EQ_INT(trove_perfetto_read(p.b, p.n, &opt, &ev, NULL, NULL, &st, NULL), TROVE_OK);
    CHECK(ev.len == 1 && st.annotations == 8);
    trove_attrs_free(&a);
    trove_events_free(&ev);
}

int main(void)
{
    RUN(test_perfetto_nested);
    RUN(test_perfetto_interned_legacy);
    return test_done();
}
