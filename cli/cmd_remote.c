/*
 * cmd_remote.c: ls, export, import and replay against a running `trove serve` (--url), as
 * clients of its HTTP API (docs/serve.md, "The HTTP API over stored captures"). The local
 * commands (cmd_ls.c, cmd_import.c, cmd_export.c, cmd_replay.c) parse the command line and hand over here; what
 * comes back looks as it does from a local store: ls prints the same table, export and
 * replay write their output through cli_out (complete or not at all), import prints the
 * same kind of summary.
 *
 *   ls      GET /api/captures (and GET /api/captures/NAME for each capture's segments)
 *   export  GET /api/captures/NAME/export?format=F[&from_ns=A][&to_ns=B], streamed into -o
 *   import  POST /api/captures/import?name=NAME[&append=1], the file streamed as the body
 *           (stdin, a pipe or a device is spooled to an unlinked temp file first, for its
 *           length)
 *   replay  the WebSocket GET /api/replay?capture=NAME&wire=W[&from_ns][&to_ns][&speed]
 *           through trove_live_view: one wire frame a binary message, written to -o as a
 *           wire stream, or printed as `trove cat` prints events on a terminal
 *
 * Nothing from the service is trusted: an answer is parsed with bounds (cli_remote_do's
 * mem_max), a capture name it lists is checked before it goes into a path, every frame's
 * header is checked and must fill its message exactly, and a replay is complete only if
 * it ends with {"type":"end"} naming as many events as came.
 */
#define _GNU_SOURCE /* mkstemp */

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trove/serve.h"

#define LIST_MAX ((size_t)64 << 20)  /* GET /api/captures: 64 MiB of JSON */
#define ANSWER_MAX ((size_t)1 << 20) /* a capture's details, an import's result */
#define SPOOL_CHUNK ((size_t)1 << 20)

/* The names of the service come into paths and lines: only the store's own names. */
static int name_ok(const char *name) { return name && trove_volume_name_check(name, NULL) == TROVE_OK; }

/* A JSON member as a count: a non-negative integer, else 0 and *ok cleared. */
static uint64_t member_u64(json_t *o, const char *key, int *ok)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        return (uint64_t)json_integer_value(v);
    if (ok)
        *ok = 0;
    return 0;
}

/* body as one JSON document on stdout, ending in a newline. 0, or 1 after an error. */
static int print_body(const char *cmd, const struct trove_bytes *body)
{
    if ((body->len && fwrite(body->ptr, 1, body->len, stdout) != body->len) ||
        (body->len && body->ptr[body->len - 1] != '\n' && putchar('\n') == EOF) ||
        fflush(stdout) != 0)
        return cli_error(cmd, "writing stdout: %s", strerror(errno));
    return 0;
}

/* body parsed as JSON of the given type (JSON_ARRAY or JSON_OBJECT); NULL after an error
 * naming the request. */
static json_t *parse_answer(const char *cmd, const struct cli_remote *r, const char *path,
                            const struct trove_bytes *body, json_type type)
{
    json_error_t e;
    json_t *j = json_loadb(body->len ? (const char *)body->ptr : "", body->len, 0, &e);

    if (j && json_typeof(j) == type)
        return j;
    json_decref(j);
    if (!j)
        cli_error(cmd, "%s%s: the answer is not JSON (%s at byte %d)", r->base, path, e.text,
                  e.position);
    else
        cli_error(cmd, "%s%s: the answer is not a JSON %s", r->base, path,
                  type == JSON_ARRAY ? "array" : "object");
    return NULL;
}

/* ---- ls --url ---------------------------------------------------------------------------- */

int cli_remote_ls(const struct cli_remote_args *a)
{
    struct cli_remote r;
    struct cli_request q;
    struct trove_bytes body = {0};
    json_t *list = NULL, *c;
    size_t width = 4, damaged = 0, marked = 0, i;
    int status = 1;

    cli_remote_catch_signals();
    if (cli_remote_open("ls", a->url, a->token_file, &r))
        return 1;
    memset(&q, 0, sizeof q);
    q.path = "/api/captures";
    q.mem = &body;
    q.mem_max = LIST_MAX;
    if ((status = cli_remote_do(&r, &q)) != 0)
        goto out;
    status = 1;
    if (!(list = parse_answer("ls", &r, q.path, &body, JSON_ARRAY)))
        goto out;
    json_array_foreach(list, i, c) {
        const char *name = json_string_value(json_object_get(c, "name"));
        if (!json_is_object(c) || !name_ok(name) || json_object_get(c, "error"))
            damaged++;
        else if (strlen(name) > width)
            width = strlen(name);
        if (json_is_object(c) && member_u64(c, "damaged", NULL) > 0)
            marked++; /* objects it names are on record as damaged */
    }
    if (a->json) {
        if (print_body("ls", &body))
            goto out;
    } else {
        json_array_foreach(list, i, c) {
            const char *name = json_string_value(json_object_get(c, "name"));
            json_t *err = json_object_get(c, "error"), *used = json_object_get(c, "last_used_ns");
            json_t *fmt = json_object_get(c, "segment_format");
            struct cli_capture_line l;
            int ok = 1;
            if (!json_is_object(c) || !name_ok(name)) {
                printf("%-*s unreadable: the service listed an entry without a capture name\n",
                       (int)width, "?");
                continue;
            }
            if (err) {
                const char *m = json_string_value(err);
                printf("%-*s unreadable: ", (int)width, name);
                for (const char *p = m ? m : "(no message)"; *p; p++)
                    putchar((unsigned char)*p < 0x20 ? '?' : *p);
                putchar('\n');
                continue;
            }
            memset(&l, 0, sizeof l);
            l.name = name;
            l.events = member_u64(c, "events", &ok);
            l.first_ns = member_u64(c, "first_ns", &ok);
            l.end_ns = member_u64(c, "end_ns", &ok);
            l.stored_bytes = member_u64(c, "stored_bytes", &ok);
            l.samples = member_u64(c, "samples", &ok);
            l.damaged = member_u64(c, "damaged", &ok);
            l.have_segments = json_is_integer(json_object_get(c, "segments"));
            l.segments = member_u64(c, "segments", &ok);
            l.format = json_is_string(fmt) ? json_string_value(fmt) : NULL;
            l.live = json_is_true(json_object_get(c, "live"));
            l.have_used = json_is_integer(used) && json_integer_value(used) >= 0;
            l.last_used_ns = l.have_used ? (uint64_t)json_integer_value(used) : 0;
            cli_print_capture_line(stdout, (int)width, &l);
        }
        if (fflush(stdout) != 0) {
            cli_error("ls", "writing stdout: %s", strerror(errno));
            goto out;
        }
    }
    if (damaged)
        cli_error("ls", "%s: %zu of %zu captures cannot be read (listed above; `trove verify` "
                        "on the service's store says more)",
                  r.base, damaged, json_array_size(list));
    if (marked)
        cli_error("ls", "%s: %zu of %zu captures have damaged objects on record (marked "
                        "above); `trove verify` on the service's store lists them, and "
                        "importing each capture again heals it",
                  r.base, marked, json_array_size(list));
    if (damaged || marked)
        goto out;
    status = 0;
out:
    json_decref(list);
    trove_bytes_free(&body);
    cli_remote_close(&r);
    return status;
}

/* ---- export --url ------------------------------------------------------------------------ */

/* "&from_ns=A&to_ns=B" for the range given, into buf. */
static void range_query(char *buf, size_t cap, uint64_t from_ns, uint64_t to_ns)
{
    int n = 0;
    buf[0] = 0;
    if (from_ns)
        n = snprintf(buf, cap, "&from_ns=%llu", (unsigned long long)from_ns);
    if (to_ns != UINT64_MAX && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "&to_ns=%llu", (unsigned long long)to_ns);
}

int cli_remote_export(const struct cli_remote_args *a)
{
    struct cli_remote r;
    struct cli_request q;
    struct trove_output o = {0};
    char path[512], range[64];
    int status;

    cli_remote_catch_signals();
    if (cli_remote_open("export", a->url, a->token_file, &r))
        return 1;
    range_query(range, sizeof range, a->from_ns, a->to_ns);
    snprintf(path, sizeof path, "/api/captures/%s/export?format=%s%s", a->name, a->format,
             range);
    /* Chrome JSON is text: it may go to a terminal. */
    if ((status = cli_out_open("export", a->out, strcmp(a->format, "chrome-json") != 0, &o)))
        goto out;
    memset(&q, 0, sizeof q);
    q.path = path;
    q.out = o.f;
    q.out_name = o.path;
    q.progress = "downloading";
    if ((status = cli_remote_do(&r, &q)) != 0 || (status = cli_out_commit("export", &o)) != 0)
        goto out;
    if (a->json) {
        fputs("{\"capture\":", stdout);
        cli_json_string(stdout, a->name, strlen(a->name));
        fputs(",\"url\":", stdout);
        cli_json_string(stdout, r.base, strlen(r.base));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, a->out, strlen(a->out));
        printf(",\"format\":\"%s\",\"bytes\":%llu}\n", a->format, (unsigned long long)q.bytes);
        if (fflush(stdout) != 0)
            status = cli_error("export", "writing stdout: %s", strerror(errno));
    } else if (!a->quiet) {
        fprintf(stderr, "trove export: capture %s of %s -> %s (%s): %llu bytes\n", a->name,
                r.base, strcmp(a->out, "-") ? a->out : "stdout", a->format,
                (unsigned long long)q.bytes);
    }
out:
    cli_out_abort(&o);
    cli_remote_close(&r);
    return status;
}

/* ---- import --url ------------------------------------------------------------------------ */

/* in as a file to post, whose length is known: a regular file as it is, anything else
 * (stdin, a pipe, a device) copied to an unlinked temp file. NULL after an error. */
static FILE *body_file(const char *in, uint64_t *len)
{
    struct stat st;
    const char *dir = getenv("TMPDIR");
    char tmpl[4096];
    uint8_t *chunk = NULL;
    FILE *f = NULL, *src = NULL;
    int fd = -1;

    if (strcmp(in, "-") != 0) {
        if (!(f = fopen(in, "rb"))) {
            cli_error("import", "%s: %s", in, strerror(errno));
            return NULL;
        }
        if (fstat(fileno(f), &st) != 0) {
            cli_error("import", "%s: %s", in, strerror(errno));
            fclose(f);
            return NULL;
        }
        if (S_ISDIR(st.st_mode)) {
            fclose(f);
            cli_error("import", "%s is a directory; the service takes one file (a bundle, a "
                                "Parquet events file, a Chrome JSON trace or a wire stream)", in);
            return NULL;
        }
        if (S_ISREG(st.st_mode)) {
            *len = (uint64_t)st.st_size;
            return f;
        }
        src = f;
        f = NULL;
    } else {
        src = stdin;
    }
    /* Spooled, for the request's Content-Length. */
    if ((size_t)snprintf(tmpl, sizeof tmpl, "%s/trove-import-XXXXXX",
                         dir && *dir ? dir : "/tmp") >= sizeof tmpl) {
        cli_error("import", "$TMPDIR is too long");
        goto fail;
    }
    if ((fd = mkstemp(tmpl)) < 0 || unlink(tmpl) != 0 || !(f = fdopen(fd, "w+b"))) {
        cli_error("import", "a temp file for %s in %s: %s", strcmp(in, "-") ? in : "stdin",
                  dir && *dir ? dir : "/tmp", strerror(errno));
        goto fail;
    }
    fd = -1;
    if (!(chunk = malloc(SPOOL_CHUNK))) {
        cli_error("import", "out of memory");
        goto fail;
    }
    *len = 0;
    for (;;) {
        size_t n = fread(chunk, 1, SPOOL_CHUNK, src);
        if (n && fwrite(chunk, 1, n, f) != n) {
            cli_error("import", "spooling %s to a temp file: %s", strcmp(in, "-") ? in : "stdin",
                      strerror(errno));
            goto fail;
        }
        *len += n;
        if (n < SPOOL_CHUNK) {
            if (ferror(src)) {
                cli_error("import", "reading %s: %s", strcmp(in, "-") ? in : "stdin",
                          strerror(errno));
                goto fail;
            }
            break;
        }
    }
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0) {
        cli_error("import", "spooling %s to a temp file: %s", strcmp(in, "-") ? in : "stdin",
                  strerror(errno));
        goto fail;
    }
    free(chunk);
    if (src != stdin)
        fclose(src);
    return f;
fail:
    free(chunk);
    if (fd >= 0)
        close(fd);
    if (f)
        fclose(f);
    if (src && src != stdin)
        fclose(src);
    return NULL;
}

int cli_remote_import(const struct cli_remote_args *a)
{
    struct cli_remote r;
    struct cli_request q;
    struct trove_bytes body = {0};
    struct trove_diag diag = {0};
    char path[512];
    json_t *res = NULL;
    FILE *f = NULL;
    uint64_t len = 0;
    int status = 1, ok = 1;

    if (trove_volume_name_check(a->name, &diag) != TROVE_OK)
        return cli_error("import", "'%s' is not a capture name: %s%s", a->name, diag.msg,
                         a->name_defaulted ? " (it comes from IN's name; give one with --name)"
                                           : "");
    cli_remote_catch_signals();
    if (cli_remote_open("import", a->url, a->token_file, &r))
        return 1;
    if (!(f = body_file(a->in, &len)))
        goto out;
    snprintf(path, sizeof path, "/api/captures/import?name=%s%s", a->name,
             a->append ? "&append=1" : "");
    memset(&q, 0, sizeof q);
    q.path = path;
    q.body = f;
    q.body_len = len;
    q.body_name = strcmp(a->in, "-") ? a->in : "stdin";
    q.mem = &body;
    q.mem_max = ANSWER_MAX;
    q.progress = "uploading";
    if ((status = cli_remote_do(&r, &q)) != 0)
        goto out;
    status = 1;
    if (!(res = parse_answer("import", &r, path, &body, JSON_OBJECT)))
        goto out;
    if (a->json) {
        if (print_body("import", &body))
            goto out;
    } else if (!a->quiet) {
        json_t *warn = json_object_get(res, "warnings");
        uint64_t events = member_u64(res, "events", &ok);
        uint64_t objects = member_u64(res, "new_objects", &ok);
        for (size_t i = 0; i < json_array_size(warn); i++) { /* what the service did not keep */
            const char *m = json_string_value(json_object_get(json_array_get(warn, i), "message"));
            if (m)
                fprintf(stderr, "trove import: warning (the service): %s\n", m);
        }
        uint64_t bytes = member_u64(res, "new_bytes", &ok);
        if (ok)
            fprintf(stderr, "trove import: %s -> capture %s of %s%s: %llu events; %llu new "
                            "object%s, %llu new bytes\n",
                    q.body_name, a->name, r.base, a->append ? " (appended)" : "",
                    (unsigned long long)events, (unsigned long long)objects,
                    objects == 1 ? "" : "s", (unsigned long long)bytes);
        else
            fprintf(stderr, "trove import: %s -> capture %s of %s: stored (the answer has no "
                            "counts)\n", q.body_name, a->name, r.base);
    }
    status = 0;
out:
    json_decref(res);
    if (f)
        fclose(f);
    trove_bytes_free(&body);
    cli_remote_close(&r);
    return status;
}

/* ---- replay --url ------------------------------------------------------------------------ */

struct rview {
    FILE *f;     /* the frames' file, or stdout for text */
    int text;    /* print the events as `trove cat` does */
    struct trove_wire_decoder *dec;
    struct trove_event *ev;
    struct trove_names *names;
    uint64_t events, batches, frames, bytes, end_events;
    int ended, failed;
    char wire[16];
    char err[640];
};

static int rview_text(void *ctx, const char *msg, size_t len)
{
    struct rview *v = ctx;
    json_t *j = json_loadb(msg, len, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    int stop = 0;

    if (!type) {
        /* not a control message of the API: ignored */
    } else if (!strcmp(type, "hello")) {
        const char *w = json_string_value(json_object_get(j, "wire"));
        if (w && strlen(w) < sizeof v->wire && strspn(w, "abcdefghijklmnopqrstuvwxyz") == strlen(w))
            snprintf(v->wire, sizeof v->wire, "%s", w);
    } else if (!strcmp(type, "end")) {
        int ok = 1;
        v->ended = 1;
        v->end_events = member_u64(j, "events", &ok);
        if (!ok)
            v->end_events = v->events;
    } else if (!strcmp(type, "error")) {
        const char *m = json_string_value(json_object_get(j, "message"));
        size_t n = 0;
        n = (size_t)snprintf(v->err, sizeof v->err, "the service refused the replay: ");
        for (const char *p = m ? m : "(no message)"; *p && n + 1 < sizeof v->err && n < 500; p++)
            v->err[n++] = (unsigned char)*p < 0x20 ? '?' : *p;
        v->err[n] = 0;
        v->failed = stop = 1;
    } else if (!strcmp(type, "gap")) {
        snprintf(v->err, sizeof v->err, "the service dropped %llu events (a gap) after %llu: the "
                                        "replay is not complete",
                 (unsigned long long)member_u64(j, "events", NULL),
                 (unsigned long long)v->events);
        v->failed = stop = 1;
    }
    json_decref(j);
    return stop;
}

static int rview_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct rview *v = ctx;
    struct trove_wire_header h;
    struct trove_wire_frame fr;
    struct trove_diag diag = {0};
    int rc;

    /* Each binary message is one whole frame: its header says how long. */
    if ((rc = trove_wire_parse_header(frame, len, &h, &diag)) != TROVE_OK ||
        (size_t)TROVE_WIRE_HEADER_SIZE + h.payload_len != len) {
        snprintf(v->err, sizeof v->err, "message %llu (%zu bytes) is not one wire frame: %s",
                 (unsigned long long)v->frames + 1, len,
                 rc != TROVE_OK ? cli_diag_msg(&diag, rc) : "its length is not the header's");
        v->failed = 1;
        return 1;
    }
    if (v->text) {
        if ((rc = trove_wire_decode(v->dec, frame, len, v->ev, TROVE_WIRE_MAX_EVENTS, v->names,
                                    &fr, &diag)) != TROVE_OK) {
            snprintf(v->err, sizeof v->err, "frame %llu does not decode: %s",
                     (unsigned long long)v->frames + 1, cli_diag_msg(&diag, rc));
            v->failed = 1;
            return 1;
        }
        for (size_t i = 0; i < fr.n_events; i++)
            cli_print_event(v->f, &v->ev[i], v->names, 0);
    }
    if ((!v->text && fwrite(frame, 1, len, v->f) != len) || ferror(v->f)) {
        snprintf(v->err, sizeof v->err, "writing the output: %s", strerror(errno ? errno : EIO));
        v->failed = 1;
        return 1;
    }
    if (h.format != TROVE_WIRE_NAMES) {
        v->events += h.count;
        v->batches++;
    }
    v->frames++;
    v->bytes += len;
    return 0;
}

static int rview_tick(void *ctx)
{
    (void)ctx;
    return cli_remote_interrupted() != 0;
}

int cli_remote_replay(const struct cli_remote_args *a)
{
    struct trove_live_view_options vo;
    struct trove_diag diag = {0};
    struct cli_remote r;
    struct trove_output o = {0};
    struct rview v;
    char path[4096], range[64], speed[64] = "";
    const char *out_name = a->out && strcmp(a->out, "-") ? a->out : "stdout";
    int status = 1, close_code = 0, rc, sig;

    memset(&v, 0, sizeof v);
    cli_remote_catch_signals();
    if (cli_remote_open("replay", a->url, a->token_file, &r))
        return 1;
    range_query(range, sizeof range, a->from_ns, a->to_ns);
    if (a->speed)
        snprintf(speed, sizeof speed, "&speed=%s", a->speed);
    snprintf(path, sizeof path, "%s/api/replay?capture=%s&wire=%s%s%s", r.prefix, a->name,
             trove_wire_format_name(a->wire), range, speed);
    /* Where the frames go: FILE (through cli_out), stdout, or text on a terminal. */
    v.text = !a->out && isatty(STDOUT_FILENO);
    if (!v.text && cli_out_open("replay", a->out ? a->out : "-", 1, &o))
        goto out;
    v.f = v.text ? stdout : o.f;
    if (v.text && (trove_wire_decoder_new(&v.dec) != TROVE_OK ||
                   trove_names_new(&v.names) != TROVE_OK ||
                   !(v.ev = malloc(TROVE_WIRE_MAX_EVENTS * sizeof *v.ev)))) {
        cli_error("replay", "out of memory");
        goto out;
    }
    memset(&vo, 0, sizeof vo);
    vo.url = a->url;
    vo.capture = a->name;
    vo.wire = a->wire;
    vo.path = path;
    vo.token = r.token[0] ? r.token : NULL;
    vo.on_text = rview_text;
    vo.on_frame = rview_frame;
    vo.on_tick = rview_tick;
    vo.ctx = &v;
    rc = trove_live_view(&vo, &close_code, &diag);
    if ((sig = cli_remote_interrupted()) != 0) {
        cli_error("replay", "interrupted (%s) after %llu events",
                  sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)v.events);
        status = 128 + sig;
        goto out;
    }
    if (rc != TROVE_OK) {
        const char *m = cli_diag_msg(&diag, rc);
        cli_error("replay", "%s%s", m,
                  !strstr(m, " 401") ? ""
                  : r.token[0]       ? " (the service refused the token given)"
                                     : " (the service needs a token: give --token-file FILE or "
                                       "set TROVE_TOKEN)");
        goto out;
    }
    if (v.failed) {
        cli_error("replay", "%s%s: %s", r.base, path + strlen(r.prefix), v.err);
        goto out;
    }
    if (!v.ended) {
        cli_error("replay", "%s%s: the service closed the connection (code %d) before the end, "
                            "after %llu events",
                  r.base, path + strlen(r.prefix), close_code, (unsigned long long)v.events);
        goto out;
    }
    if (v.end_events != v.events) {
        cli_error("replay", "%s%s: the service ended the replay at %llu events, but %llu came",
                  r.base, path + strlen(r.prefix), (unsigned long long)v.end_events,
                  (unsigned long long)v.events);
        goto out;
    }
    if (v.text ? fflush(stdout) != 0 : cli_out_commit("replay", &o) != 0) {
        if (v.text)
            cli_error("replay", "writing stdout: %s", strerror(errno));
        goto out;
    }
    if (a->json) {
        fputs("{\"capture\":", stdout);
        cli_json_string(stdout, a->name, strlen(a->name));
        fputs(",\"url\":", stdout);
        cli_json_string(stdout, r.base, strlen(r.base));
        fputs(",\"output\":", stdout);
        cli_json_string(stdout, out_name, strlen(out_name));
        printf(",\"wire\":\"%s\",\"events\":%llu,\"batches\":%llu,\"frames\":%llu,"
               "\"bytes\":%llu}\n",
               v.wire[0] ? v.wire : trove_wire_format_name(a->wire),
               (unsigned long long)v.events, (unsigned long long)v.batches,
               (unsigned long long)v.frames, (unsigned long long)v.bytes);
        if (fflush(stdout) != 0) {
            cli_error("replay", "writing stdout: %s", strerror(errno));
            goto out;
        }
    } else if (!a->quiet && !v.text) {
        fprintf(stderr, "trove replay: %s of %s -> %s (%s): %llu events in %llu batches, %llu "
                        "bytes\n",
                a->name, r.base, out_name, v.wire[0] ? v.wire : trove_wire_format_name(a->wire),
                (unsigned long long)v.events, (unsigned long long)v.batches,
                (unsigned long long)v.bytes);
    }
    status = 0;
out:
    cli_out_abort(&o);
    trove_wire_decoder_free(v.dec);
    trove_names_free(v.names);
    free(v.ev);
    cli_remote_close(&r);
    return status;
}
