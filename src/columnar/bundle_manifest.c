/*
 * bundle_manifest.c: manifest.json, the capture bundle's description of itself
 * (include/trove/bundle.h), encoded and decoded over jansson.
 *
 *   {
 *     "format": "trove-bundle",
 *     "format_version": 1,
 *     "capture": "...",
 *     "time_range_ns": [start, end],
 *     "counts": {"events": N, "names": N, "threads": N, "samples": N, "frames": N,
 *                "flows": N, "sort_indexes": N,     (each of the last four only when not 0)
 *                "stacks": N, "switches": N, "args": N},
 *     "tables": ["events.parquet", ...],
 *     "trove_version": "0.1.0"
 *   }
 *
 *   two-space indent, keys in this order, one trailing newline
 *
 * Why it is built this way: jansson keeps object keys in insertion order, so encoding
 * builds the object in the documented order and the bytes are the same for the same
 * manifest; decoding rejects duplicate keys and NUL in strings, checks every field's type
 * and range before it is copied, and fills the caller's manifest only once all of it is
 * valid. Table names follow the bundle's entry-name rule (trove_bundle_name_check).
 */
#include "trove/bundle.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/fail.h"

#define MAX_TABLES 16u

#define MAX_JSON_INT ((uint64_t)INT64_MAX)

/* The length of s if it is NUL-terminated within cap bytes and valid UTF-8, else -1. */
static long string_field(const char *s, size_t cap)
{
    const char *nul = memchr(s, 0, cap);
    size_t len;
    if (!nul)
        return -1;
    len = (size_t)(nul - s);
    return trove__utf8_valid_prefix((const uint8_t *)s, len) == len ? (long)len : -1;
}

/* Set key of obj to value (whose reference obj takes, on failure too). */
static int put(json_t *obj, const char *key, json_t *value)
{
    return value && json_object_set_new(obj, key, value) == 0 ? TROVE_OK : TROVE_ERR_NOMEM;
}

static json_t *json_u64(uint64_t v) { return json_integer((json_int_t)v); }

int trove_bundle_manifest_encode(const struct trove_bundle_manifest *m, struct trove_bytes *out)
{
    json_t *root = NULL, *range = NULL, *counts = NULL, *tables = NULL;
    char *text = NULL;
    size_t tlen;
    int rc = TROVE_ERR_INVALID;

    if (!m || !out || m->format_version != TROVE_BUNDLE_FORMAT_VERSION ||
        m->start_ns > MAX_JSON_INT || m->end_ns > MAX_JSON_INT || m->end_ns < m->start_ns ||
        m->events > MAX_JSON_INT || m->names > MAX_JSON_INT || m->threads > MAX_JSON_INT ||
        m->samples > MAX_JSON_INT || m->frames > MAX_JSON_INT || m->flows > MAX_JSON_INT ||
        m->sort_indexes > MAX_JSON_INT || m->stacks > MAX_JSON_INT || m->switches > MAX_JSON_INT ||
        m->args > MAX_JSON_INT ||
        m->ntables > MAX_TABLES ||
        string_field(m->capture, sizeof m->capture) < 0 ||
        string_field(m->trove_version, sizeof m->trove_version) < 0)
        goto out;
    for (size_t i = 0; i < m->ntables; i++) {
        long len = string_field(m->tables[i], sizeof m->tables[i]);
        if (len < 0 || trove_bundle_name_check(m->tables[i], (size_t)len, NULL) != TROVE_OK)
            goto out;
    }
    rc = TROVE_ERR_NOMEM;
    root = json_object();
    range = json_array();
    counts = json_object();
    tables = json_array();
    if (!root || !range || !counts || !tables)
        goto out;
    if (json_array_append_new(range, json_u64(m->start_ns)) != 0 ||
        json_array_append_new(range, json_u64(m->end_ns)) != 0)
        goto out;
    for (size_t i = 0; i < m->ntables; i++)
        if (json_array_append_new(tables, json_string(m->tables[i])) != 0)
            goto out;
    if (put(counts, "events", json_u64(m->events)) || put(counts, "names", json_u64(m->names)) ||
        put(counts, "threads", json_u64(m->threads)) ||
        put(counts, "samples", json_u64(m->samples)) ||
        put(counts, "frames", json_u64(m->frames)) ||
        (m->flows > 0 && put(counts, "flows", json_u64(m->flows))) ||
        (m->sort_indexes > 0 && put(counts, "sort_indexes", json_u64(m->sort_indexes))) ||
        (m->stacks > 0 && put(counts, "stacks", json_u64(m->stacks))) ||
        (m->switches > 0 && put(counts, "switches", json_u64(m->switches))) ||
        (m->args > 0 && put(counts, "args", json_u64(m->args))))
        goto out;
    rc = put(root, "format", json_string("trove-bundle"));
    if (!rc)
        rc = put(root, "format_version", json_u64(m->format_version));
    if (!rc)
        rc = put(root, "capture", json_string(m->capture));
    if (!rc)
        rc = put(root, "time_range_ns", range);
    range = NULL;
    if (!rc)
        rc = put(root, "counts", counts);
    counts = NULL;
    if (!rc)
        rc = put(root, "tables", tables);
    tables = NULL;
    if (!rc)
        rc = put(root, "trove_version", json_string(m->trove_version));
    if (rc)
        goto out;
    text = json_dumps(root, JSON_INDENT(2));
    if (!text) {
        rc = TROVE_ERR_NOMEM;
        goto out;
    }
    tlen = strlen(text);
    rc = trove_bytes_reserve(out, tlen + 1);
    if (rc == TROVE_OK) {
        memcpy(out->ptr + out->len, text, tlen);
        out->ptr[out->len + tlen] = '\n';
        out->len += tlen + 1;
    }
out:
    free(text);
    json_decref(root);
    json_decref(range);
    json_decref(counts);
    json_decref(tables);
    return rc;
}

/* A required non-negative integer member key of obj (in is the path for messages). */
static int get_u64(json_t *obj, const char *in, const char *key, uint64_t *v,
                   struct trove_diag *diag)
{
    json_t *j = json_object_get(obj, key);
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "manifest: %s\"%s\" must be a non-negative integer", in, key);
    *v = (uint64_t)json_integer_value(j);
    return TROVE_OK;
}

/* Copy JSON string j (what names it) into dst[cap]: at most cap - 1 bytes. */
static int get_str(json_t *j, const char *what, char *dst, size_t cap, struct trove_diag *diag)
{
    size_t len;
    if (!json_is_string(j))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "manifest: %s must be a string", what);
    len = json_string_length(j);
    if (len >= cap)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0,
                          "manifest: %s is %zu bytes, more than %zu", what, len, cap - 1);
    memcpy(dst, json_string_value(j), len);
    dst[len] = 0;
    return TROVE_OK;
}

/* Decode the fields of root (an object) into m. */
static int decode_fields(json_t *root, struct trove_bundle_manifest *m, struct trove_diag *diag)
{
    json_t *j = json_object_get(root, "format"), *range, *counts, *tables;
    uint64_t v = 0;
    int rc;

    if (!json_is_string(j) || strcmp(json_string_value(j), "trove-bundle") != 0 ||
        json_string_length(j) != strlen("trove-bundle"))
        return TROVE_FAIL(diag, TROVE_ERR_MAGIC, 0,
                          "manifest: \"format\" is not \"trove-bundle\"");
    if ((rc = get_u64(root, "", "format_version", &v, diag)) != TROVE_OK)
        return rc;
    if (v > TROVE_BUNDLE_FORMAT_VERSION)
        return TROVE_FAIL(diag, TROVE_ERR_VERSION, 0,
                          "manifest: format_version %llu, this build reads %u",
                          (unsigned long long)v, TROVE_BUNDLE_FORMAT_VERSION);
    if (v == 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "manifest: format_version 0");
    m->format_version = (uint32_t)v;
    if ((rc = get_str(json_object_get(root, "capture"), "\"capture\"", m->capture,
                      sizeof m->capture, diag)) != TROVE_OK)
        return rc;
    range = json_object_get(root, "time_range_ns");
    if (!json_is_array(range) || json_array_size(range) != 2 ||
        !json_is_integer(json_array_get(range, 0)) || !json_is_integer(json_array_get(range, 1)) ||
        json_integer_value(json_array_get(range, 0)) < 0 ||
        json_integer_value(json_array_get(range, 1)) < 0)
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0,
                          "manifest: \"time_range_ns\" must be [start, end], non-negative "
                          "integers");
    m->start_ns = (uint64_t)json_integer_value(json_array_get(range, 0));
    m->end_ns = (uint64_t)json_integer_value(json_array_get(range, 1));
    if (m->end_ns < m->start_ns)
        return TROVE_FAIL(diag, TROVE_ERR_NEGATIVE, 0,
                          "manifest: \"time_range_ns\" ends before it starts");
    counts = json_object_get(root, "counts");
    if (!json_is_object(counts))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "manifest: \"counts\" must be an object");
    if ((rc = get_u64(counts, "counts.", "events", &m->events, diag)) ||
        (rc = get_u64(counts, "counts.", "names", &m->names, diag)) ||
        (rc = get_u64(counts, "counts.", "threads", &m->threads, diag)) ||
        (rc = get_u64(counts, "counts.", "samples", &m->samples, diag)) ||
        (rc = get_u64(counts, "counts.", "frames", &m->frames, diag)))
        return rc;
    /* "flows" came with the flows table: a bundle without flows may leave it out */
    if (json_object_get(counts, "flows") &&
        (rc = get_u64(counts, "counts.", "flows", &m->flows, diag)))
        return rc;
    /* "sort_indexes" came with the sort_indexes table, written only when there are some */
    if (json_object_get(counts, "sort_indexes") &&
        (rc = get_u64(counts, "counts.", "sort_indexes", &m->sort_indexes, diag)))
        return rc;
    /* "stacks" and "switches" came with the profile's tables, written only with rows */
    if (json_object_get(counts, "stacks") &&
        (rc = get_u64(counts, "counts.", "stacks", &m->stacks, diag)))
        return rc;
    if (json_object_get(counts, "switches") &&
        (rc = get_u64(counts, "counts.", "switches", &m->switches, diag)))
        return rc;
    /* "args" came with the args table, written only with attributes */
    if (json_object_get(counts, "args") &&
        (rc = get_u64(counts, "counts.", "args", &m->args, diag)))
        return rc;
    tables = json_object_get(root, "tables");
    if (!json_is_array(tables))
        return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "manifest: \"tables\" must be an array");
    if (json_array_size(tables) > MAX_TABLES)
        return TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "manifest: %zu tables, more than %u",
                          json_array_size(tables), MAX_TABLES);
    m->ntables = json_array_size(tables);
    for (size_t i = 0; i < m->ntables; i++) {
        const char *why;
        char what[32];
        snprintf(what, sizeof what, "\"tables\"[%zu]", i);
        if ((rc = get_str(json_array_get(tables, i), what, m->tables[i], sizeof m->tables[i],
                          diag)) != TROVE_OK)
            return rc;
        if (trove_bundle_name_check(m->tables[i], strlen(m->tables[i]), &why) != TROVE_OK)
            return TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "manifest: %s: %s", what, why);
    }
    return get_str(json_object_get(root, "trove_version"), "\"trove_version\"", m->trove_version,
                   sizeof m->trove_version, diag);
}

int trove_bundle_manifest_decode(const uint8_t *buf, size_t len, struct trove_bundle_manifest *m,
                                 struct trove_diag *diag)
{
    struct trove_bundle_manifest tmp;
    json_error_t jerr;
    json_t *root = NULL;
    int rc;

    if ((!buf && len) || !m) {
        rc = TROVE_FAIL(diag, TROVE_ERR_INVALID, 0, "no input or output");
        goto out;
    }
    if (len > TROVE_BUNDLE_MAX_MANIFEST) {
        rc = TROVE_FAIL(diag, TROVE_ERR_LIMIT, 0, "manifest of %zu bytes, more than %u", len,
                        TROVE_BUNDLE_MAX_MANIFEST);
        goto out;
    }
    root = json_loadb(len ? (const char *)buf : "", len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        rc = TROVE_FAIL(diag, TROVE_ERR_JSON, (uint64_t)(jerr.position > 0 ? jerr.position : 0),
                        "manifest: %s", jerr.text);
        goto out;
    }
    if (!json_is_object(root)) {
        rc = TROVE_FAIL(diag, TROVE_ERR_CORRUPT, 0, "manifest: not a JSON object");
        goto out;
    }
    memset(&tmp, 0, sizeof tmp);
    rc = decode_fields(root, &tmp, diag);
    if (rc == TROVE_OK)
        *m = tmp;
out:
    json_decref(root);
    return rc;
}
