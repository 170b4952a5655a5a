/*
 * bench_attrs.c: `trove bench attrs`, the attributes object (docs/formats/attrs.md) on a real
 * trace's args: its size against zstd -19 (and -3) of the same args written as one JSON line
 * per event that has them ("INDEX\t{...}\n", the event's index in the file's order), and the
 * median encode and decode times of 5 runs.
 *
 * The args become rows as an importer would make them: an integer a TROVE_ATTR_INT, any
 * other number a double, a string a string, true and false a bool, anything else (an object,
 * an array, null) its compact JSON text. (jansson holds integers in int64: a trace with a
 * larger one is read with numbers as doubles, those that are integers up to 2^53 made
 * integers again, the others kept as doubles.)
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "bench.h"
#include "cli.h"
#include "trove/attrs.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: trove bench attrs --input TRACE.json [--level N] [--json]\n"
               "\n"
               "The args of a Chrome JSON trace as trove's attributes object (docs/formats/attrs.md)\n"
               "next to zstd -19 and -3 of them as one JSON line per event: bytes, and the median\n"
               "encode and decode time of 5 runs.\n"
               "  --input TRACE.json  a Chrome trace (JSON; the array or {\"traceEvents\": [...]})\n"
               "  --level N           the object's zstd level, 1..19 (default 9)\n"
               "  --json              one JSON object: events, rows, strings, json_lines_bytes,\n"
               "                      zstd19_bytes, zstd3_bytes, attrs_bytes, ratio_vs_zstd19,\n"
               "                      encode_ms, decode_ms\n");
}

static int ints_as_reals; /* the trace has an integer past int64: every number read as a double */

/* A double that was an integer of the text (when numbers were read as doubles). */
static int whole(double d)
{
    return ints_as_reals && d == (double)(int64_t)d && d > -9007199254740992.0 && d < 9007199254740992.0;
}

/* One arg as a row of a. */
static int add_arg(struct trove_attrs *a, uint64_t ev, const char *key, json_t *v)
{
    struct trove_attr r;
    int rc;

    memset(&r, 0, sizeof r);
    r.event = ev;
    if ((rc = trove_attrs_intern(a, key, strlen(key), &r.key)) != TROVE_OK)
        return rc;
    if (json_is_integer(v)) {
        r.type = TROVE_ATTR_INT;
        r.v.i = json_integer_value(v);
    } else if (json_is_real(v) && whole(json_real_value(v))) {
        r.type = TROVE_ATTR_INT; /* an integer read as a double (below) */
        r.v.i = (int64_t)json_real_value(v);
    } else if (json_is_real(v)) {
        r.type = TROVE_ATTR_DOUBLE;
        r.v.d = json_real_value(v);
    } else if (json_is_string(v)) {
        r.type = TROVE_ATTR_STRING;
        if ((rc = trove_attrs_intern(a, json_string_value(v), json_string_length(v), &r.v.s)) != TROVE_OK)
            return rc;
    } else if (json_is_boolean(v)) {
        r.type = TROVE_ATTR_BOOL;
        r.v.b = json_is_true(v);
    } else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
        r.type = TROVE_ATTR_JSON;
        rc = text ? trove_attrs_intern(a, text, strlen(text), &r.v.s) : TROVE_ERR_NOMEM;
        free(text);
        if (rc != TROVE_OK)
            return rc;
    }
    return trove_attrs_add(a, &r);
}

int bench_attrs(int argc, char **argv)
{
    const char *input = NULL;
    int level = TROVE_ATTRS_LEVEL, json = 0, status = 1;
    json_error_t je;
    json_t *doc = NULL, *events;
    struct trove_attrs a = {0};
    struct trove_bytes lines = {0}, obj = {0};
    uint8_t *z = NULL;
    size_t z19, z3, bound;
    double enc[5], dec[5];

    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--input") && i + 1 < argc) {
            input = argv[++i];
        } else if (!strcmp(argv[i], "--level") && i + 1 < argc) {
            level = atoi(argv[++i]);
            if (level < 1 || level > 19)
                return cli_error("bench attrs", "--level %s: not 1..19", argv[i]) ? 2 : 2;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!input)
        return cli_error("bench attrs", "needs --input TRACE.json; see `trove bench attrs --help`") ? 2 : 2;
    /* jansson holds integers in int64: a trace with a larger one (the sample has a u64 id)
     * is read with every number a double, integers of up to 2^53 made integers again */
    if (!(doc = json_load_file(input, 0, &je)) &&
        (ints_as_reals = 1, !(doc = json_load_file(input, JSON_DECODE_INT_AS_REAL, &je))))
        return cli_error("bench attrs", "%s: %s (line %d)", input, je.text, je.line);
    events = json_is_array(doc) ? doc : json_object_get(doc, "traceEvents");
    if (!json_is_array(events)) {
        cli_error("bench attrs", "%s: no traceEvents array", input);
        goto out;
    }
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *args = json_object_get(json_array_get(events, i), "args"), *v;
        const char *k;
        char *text, head[32];
        if (!json_is_object(args) || json_object_size(args) == 0)
            continue;
        json_object_foreach(args, k, v)
            if (add_arg(&a, i, k, v) != TROVE_OK) {
                cli_error("bench attrs", "out of memory, or past the table's limits");
                goto out;
            }
        if (!(text = json_dumps(args, JSON_COMPACT | JSON_PRESERVE_ORDER))) {
            cli_error("bench attrs", "out of memory");
            goto out;
        }
        snprintf(head, sizeof head, "%zu\t", i);
        if (trove_bytes_append(&lines, head, strlen(head)) || trove_bytes_append(&lines, text, strlen(text)) ||
            trove_bytes_append(&lines, "\n", 1)) {
            free(text);
            cli_error("bench attrs", "out of memory");
            goto out;
        }
        free(text);
    }
    bound = ZSTD_compressBound(lines.len);
    if (!(z = malloc(bound ? bound : 1))) {
        cli_error("bench attrs", "out of memory");
        goto out;
    }
    z19 = ZSTD_compress(z, bound, lines.ptr, lines.len, 19);
    z3 = ZSTD_compress(z, bound, lines.ptr, lines.len, 3);
    for (int r = 0; r < 5; r++) {
        struct trove_attrs back = {0};
        double t0 = bench_now(), t1, t2;
        obj.len = 0;
        if (trove_attrs_encode(&a, level, &obj) != TROVE_OK) {
            cli_error("bench attrs", "encoding failed");
            goto out;
        }
        t1 = bench_now();
        if (trove_attrs_decode(obj.ptr, obj.len, &back, NULL) != TROVE_OK) {
            cli_error("bench attrs", "the object does not decode");
            goto out;
        }
        t2 = bench_now();
        if (back.n != a.n || back.nstr != a.nstr) {
            trove_attrs_free(&back);
            cli_error("bench attrs", "the object decodes to another table");
            goto out;
        }
        trove_attrs_free(&back);
        enc[r] = (t1 - t0) * 1e3;
        dec[r] = (t2 - t1) * 1e3;
    }
    if (json)
        printf("{\"input\":\"%s\",\"events\":%zu,\"rows\":%zu,\"strings\":%zu,\"json_lines_bytes\":%zu,"
               "\"zstd19_bytes\":%zu,\"zstd3_bytes\":%zu,\"attrs_bytes\":%zu,\"ratio_vs_zstd19\":%.3f,"
               "\"encode_ms\":%.1f,\"decode_ms\":%.1f}\n",
               input, json_array_size(events), a.n, a.nstr, lines.len, z19, z3, obj.len,
               (double)obj.len / (double)z19, bench_median(enc, 5), bench_median(dec, 5));
    else
        printf("%s: %zu events, %zu args (%zu distinct strings)\n"
               "  JSON lines     %12zu bytes\n"
               "  zstd -3        %12zu bytes\n"
               "  zstd -19       %12zu bytes\n"
               "  attrs object   %12zu bytes  (%.3f x zstd -19; level %d; encode %.1f ms, decode %.1f ms)\n",
               input, json_array_size(events), a.n, a.nstr, lines.len, z3, z19, obj.len,
               (double)obj.len / (double)z19, level, bench_median(enc, 5), bench_median(dec, 5));
    status = 0;
out:
    free(z);
    json_decref(doc);
    trove_attrs_free(&a);
    trove_bytes_free(&lines);
    trove_bytes_free(&obj);
    return status;
}
