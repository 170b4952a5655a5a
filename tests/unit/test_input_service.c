/*
 * test_input_service.c: the service's import and export are the library's own. This test
 * links the layers of libtrove and nothing of the `trove` program (cli/), starts the service
 * in this process, and over real HTTP on loopback: imports a Chrome JSON trace and a bundle
 * (POST /api/captures/import), exports the capture in every format the API has and finds
 * the bytes trove_export writes of it (GET /api/captures/NAME/export), and posts a body that
 * is none of the kinds trove reads, whose 400 names the upload ("the body") and never the
 * file the service spooled it to.
 */
#include "support_serve.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trove/input.h"
#include "trove/tables.h"

#define ANSWER (4u << 20)

static char root[64], store[96], url[128], sock[256];
static char *answer; /* the last HTTP answer, whole ... */
static size_t answer_len; /* ... of this many bytes (a binary body holds NULs) */

static const char chrome[] =
    "[{\"name\":\"load\",\"ph\":\"X\",\"ts\":1,\"dur\":5,\"pid\":7,\"tid\":1},"
    "{\"name\":\"parse\",\"ph\":\"X\",\"ts\":2,\"dur\":2,\"pid\":7,\"tid\":1},"
    "{\"name\":\"draw\",\"ph\":\"X\",\"ts\":3,\"dur\":1,\"pid\":7,\"tid\":2},"
    "{\"name\":\"tick\",\"ph\":\"i\",\"ts\":4,\"pid\":7,\"tid\":2,\"s\":\"t\"}]";

/* The HTTP status of answer, or -1. */
static int status_of(void)
{
    int st = -1;
    return sscanf(answer, "HTTP/1.1 %d", &st) == 1 ? st : -1;
}

/* The body of answer (its chunks joined when it is chunked) into out: its length, or -1. */
static long body_of(struct trove_bytes *out)
{
    const char *p = strstr(answer, "\r\n\r\n");
    const char *c = strstr(answer, "chunked\r\n"); /* transfer-encoding's, in the head */
    int chunked = p && c && c < p;
    size_t total = answer_len;

    out->len = 0;
    if (!p)
        return -1;
    p += 4;
    if (!chunked)
        return trove_bytes_append(out, p, (size_t)(answer + total - p)) == TROVE_OK
                   ? (long)out->len
                   : -1;
    for (;;) {
        char *end;
        unsigned long n = strtoul(p, &end, 16);
        if (end == p || strncmp(end, "\r\n", 2) != 0)
            return -1;
        if (n == 0)
            return (long)out->len;
        if (trove_bytes_append(out, end + 2, n) != TROVE_OK)
            return -1;
        p = end + 2 + n + 2;
    }
}

static int request(const char *method, const char *path, const void *body, size_t len)
{
    char head[512];
    snprintf(head, sizeof head,
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n"
             "Content-Type: application/octet-stream\r\n"
             "Connection: close\r\n\r\n",
             method, path, len);
    int fd = test_http_connect(url);

    answer_len = 0;
    answer[0] = 0;
    CHECK(fd >= 0);
    if (fd < 0)
        return -1;
    CHECK(test_write_all(fd, head, strlen(head)) == 0 && (!len || test_write_all(fd, body, len) == 0));
    for (;;) {
        ssize_t r = read(fd, answer + answer_len, ANSWER - 1 - answer_len);
        if (r <= 0)
            break;
        answer_len += (size_t)r;
    }
    answer[answer_len] = 0;
    close(fd);
    return status_of();
}

/* The events of capture `name` in the store, read back by the input layer. */
static void load(const char *name, struct trove_events *ev)
{
    struct trove_input_options o;
    struct trove_names *names = NULL;
    char in[96];

    memset(&o, 0, sizeof o);
    o.store = store;
    snprintf(in, sizeof in, "store:%s", name);
    CHECK(trove_names_new(&names) == TROVE_OK);
    CHECK_EQ_INT(trove_input_load(in, &o, ev, names, NULL, NULL), TROVE_OK);
    trove_names_free(names);
}

static void test_import_chrome(void)
{
    struct trove_events ev = {0};

    CHECK_EQ_INT(request("POST", "/api/captures/import?name=web", chrome, sizeof chrome - 1),
                 200);
    CHECK(strstr(answer, "\"events\":4") != NULL);
    load("web", &ev);
    CHECK_EQ_INT(ev.len, 4);
    trove_events_free(&ev);
}

/* Each format the API exports, against trove_export of the same capture to a file. */
static void test_export_every_format(void)
{
    static const struct {
        const char *api;
        int format, deflate;
    } f[] = {
        {"bundle", TROVE_EXPORT_BUNDLE, 0},       {"parquet", TROVE_EXPORT_PARQUET, 0},
        {"dir.zip", TROVE_EXPORT_BUNDLE, 1},      {"chrome-json", TROVE_EXPORT_CHROME_JSON, 0},
        {"perfetto", TROVE_EXPORT_PERFETTO, 0},
    };

    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        struct trove_export_options x;
        struct trove_export_result r;
        struct trove_diag diag = {0};
        struct trove_bytes got = {0};
        char path[128], file[160];
        uint8_t *want;
        size_t want_len = 0;

        snprintf(path, sizeof path, "/api/captures/web/export?format=%s", f[i].api);
        CHECK_EQ_INT(request("GET", path, NULL, 0), 200);
        CHECK(body_of(&got) > 0);
        memset(&x, 0, sizeof x);
        snprintf(file, sizeof file, "%s/export.%zu", root, i);
        x.format = f[i].format;
        x.deflate = f[i].deflate;
        x.capture = "web";
        x.store = store;
        x.out = file;
        trove_tables_defaults(&x.topt);
        CHECK_EQ_INT(trove_export(&x, &r, &diag), TROVE_OK);
        CHECK_EQ_INT(r.events, 4);
        want = test_read_file(file, &want_len);
        CHECK(want != NULL && want_len == got.len && !memcmp(want, got.ptr, got.len));
        if (i == 0) { /* the bundle goes back in below */
            char back[160];
            snprintf(back, sizeof back, "%s/web.bundle", root);
            CHECK(rename(file, back) == 0);
        }
        free(want);
        trove_bytes_free(&got);
    }
}

static void test_import_bundle(void)
{
    struct trove_events a = {0}, b = {0};
    char file[160];
    uint8_t *bundle;
    size_t len = 0;

    snprintf(file, sizeof file, "%s/web.bundle", root);
    bundle = test_read_file(file, &len);
    CHECK(bundle != NULL && len > 4 && !memcmp(bundle, "PK", 2));
    CHECK_EQ_INT(request("POST", "/api/captures/import?name=back", bundle, len), 200);
    load("web", &a);
    load("back", &b);
    CHECK(a.len == 4 && b.len == a.len && !memcmp(a.ev, b.ev, a.len * sizeof *a.ev));
    trove_events_free(&a);
    trove_events_free(&b);
    free(bundle);
}

static void test_bad_body(void)
{
    static const char junk[] = "this is not a trace at all";
    struct trove_events ev = {0};
    struct trove_names *names = NULL;
    struct trove_input_options o;

    CHECK_EQ_INT(request("POST", "/api/captures/import?name=junk", junk, sizeof junk - 1), 400);
    CHECK(strstr(answer, "\"error\":\"the body: not something trove reads") != NULL);
    CHECK(strstr(answer, "/tmp") == NULL && strstr(answer, "/proc") == NULL);
    /* and nothing was stored */
    memset(&o, 0, sizeof o);
    o.store = store;
    CHECK(trove_names_new(&names) == TROVE_OK);
    CHECK(trove_input_load("store:junk", &o, &ev, names, NULL, NULL) == TROVE_ERR_NOTFOUND);
    trove_names_free(names);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    snprintf(root, sizeof root, "/tmp/trove-input-service-XXXXXX");
    if (!mkdtemp(root) || !(answer = malloc(ANSWER))) {
        perror("setup");
        return 1;
    }
    snprintf(store, sizeof store, "%s/store", root);
    CHECK_EQ_INT(test_serve_start(store, 0, url, sizeof url, sock, sizeof sock), TROVE_OK);
    RUN(test_import_chrome);
    RUN(test_export_every_format);
    RUN(test_import_bundle);
    RUN(test_bad_body);
    CHECK_EQ_INT(test_serve_stop(), TROVE_OK);
    if (test_failed == 0)
        test_rm_rf(root);
    else
        fprintf(stderr, "left %s for inspection; last answer: %.300s\n", root, answer);
    free(answer);
    return test_done();
}
