/*
 * cli_remote.c: the HTTP client of a remote `trove serve` (cli.h: cli_remote_*), for the
 * commands that take --url (ls, export, import, replay; docs/serve.md, "The HTTP API over
 * stored captures").
 *
 * One libcurl easy handle per command, so that several requests (ls asks for each capture's
 * details) share one kept-alive connection. A body is never held whole unless the caller
 * asks for it in memory under a bound: a download goes straight to the caller's FILE (the
 * cli_out temp file of export) as it arrives, an upload is read from the caller's FILE as
 * libcurl asks for it. Whether a body is the answer or an error is decided by the status
 * before its first byte is taken: a 2xx body goes where the caller said, any other is kept
 * (at most ERROR_MAX bytes) to print the service's `{"error":...,"code":...}` as one line
 * naming the URL and the status. Redirects are not followed (a bearer token goes only where
 * --url says), only http and https are spoken, and no proxy is used, as for the WebSocket
 * client (`trove replay --url`, src/net/viewer.c).
 *
 * SIGINT and SIGTERM, while a request runs, only set a flag (cli_remote_catch_signals); the
 * transfer's progress callback, called at least once a second, then aborts it and the
 * command exits 128 + the signal with its partial output removed. A second one ends the
 * process at once.
 */
#define _GNU_SOURCE /* sigaction under c11 */

#include "cli.h"
#include "cli_curl.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct cli_curl cli_curl;

#define ERROR_MAX ((size_t)64 << 10) /* an error body kept for its message */
#define MESSAGE_MAX 400              /* bytes of the service's message printed */

/* ---- signals --------------------------------------------------------------------------- */

static volatile sig_atomic_t caught;

static void on_signal(int sig) { caught = sig; }

void cli_remote_catch_signals(void)
{
    struct sigaction sa, old;
    int sigs[2] = {SIGINT, SIGTERM};

    for (int i = 0; i < 2; i++) {
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND; /* a second one: the default action */
        sigemptyset(&sa.sa_mask);
        /* A signal the process inherited as ignored (a background job) stays ignored. */
        if (sigaction(sigs[i], &sa, &old) == 0 && old.sa_handler == SIG_IGN)
            sigaction(sigs[i], &old, NULL);
    }
}

int cli_remote_interrupted(void) { return caught; }

/* ---- the token and the URL ------------------------------------------------------------- */

/* A token goes into a header line: printable ASCII without spaces only. */
static int token_bad_byte(const char *t)
{
    for (size_t i = 0; t[i]; i++)
        if ((unsigned char)t[i] < 0x21 || (unsigned char)t[i] > 0x7e)
            return (int)i;
    return -1;
}

int cli_remote_token(const char *cmd, const char *token_file, char *out, size_t cap)
{
    const char *env = getenv("TROVE_TOKEN");
    char from[4200];
    size_t n;
    int bad;

    out[0] = 0;
    if (token_file)
        snprintf(from, sizeof from, "--token-file %s", token_file);
    else
        snprintf(from, sizeof from, "$TROVE_TOKEN");
    if (token_file) {
        FILE *f = fopen(token_file, "r");
        if (!f)
            return cli_error(cmd, "--token-file %s: %s", token_file, strerror(errno));
        if (!fgets(out, (int)cap, f)) {
            int e = ferror(f) ? errno : 0;
            fclose(f);
            out[0] = 0;
            return e ? cli_error(cmd, "--token-file %s: %s", token_file, strerror(e))
                     : cli_error(cmd, "--token-file %s is empty; its first line is the token",
                                 token_file);
        }
        fclose(f);
        n = strlen(out);
        if (n == cap - 1 && out[n - 1] != '\n') {
            out[0] = 0;
            return cli_error(cmd, "--token-file %s: the first line is over %zu bytes", token_file,
                             cap - 2);
        }
        while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
            out[--n] = 0;
        if (n == 0)
            return cli_error(cmd, "--token-file %s: the first line is empty; it must hold the "
                                  "token", token_file);
    } else if (env && *env) {
        if (strlen(env) >= cap)
            return cli_error(cmd, "$TROVE_TOKEN is over %zu bytes", cap - 1);
        snprintf(out, cap, "%s", env);
    }
    if ((bad = token_bad_byte(out)) >= 0) {
        out[0] = 0;
        /* The token itself is never printed. */
        return cli_error(cmd, "%s: the token has a space or a control byte at byte %d; a token "
                              "is printable ASCII", from, bad);
    }
    return 0;
}

int cli_remote_open(const char *cmd, const char *url, const char *token_file,
                    struct cli_remote *r)
{
    const char *host;
    size_t n;

    memset(r, 0, sizeof r[0]);
    r->cmd = cmd;
    if (!strncasecmp(url, "http://", 7))
        host = url + 7;
    else if (!strncasecmp(url, "https://", 8))
        host = url + 8;
    else
        return cli_error(cmd, "--url %s: give the service as http://HOST:PORT/", url);
    n = strlen(url);
    if (!*host || *host == '/' || strcspn(url, "?# \t\r\n") != n)
        return cli_error(cmd, "--url %s: give the service as http://HOST:PORT/ (a host, no "
                              "query, no spaces)", url);
    while (n > (size_t)(host - url) && url[n - 1] == '/')
        n--; /* the paths of the API are joined on with their own '/' */
    if (n >= sizeof r->base)
        return cli_error(cmd, "--url: longer than %zu bytes", sizeof r->base - 1);
    memcpy(r->base, url, n);
    r->base[n] = 0;
    /* The path under the host, when the service sits under one: "" or "/prefix". */
    snprintf(r->prefix, sizeof r->prefix, "%s",
             strchr(r->base + (host - url), '/') ? strchr(r->base + (host - url), '/') : "");
    return cli_remote_token(cmd, token_file, r->token, sizeof r->token);
}

void cli_remote_close(struct cli_remote *r)
{
    if (r->curl)
        curl_easy_cleanup(r->curl);
    r->curl = NULL;
}

/* ---- one request ------------------------------------------------------------------------ */

struct xfer {
    struct cli_remote *r;
    struct cli_request *q;
    long status;     /* read at the first body byte */
    int have_status;
    int ok;          /* a 2xx: the body is the answer */
    int write_err;   /* errno of a failed write to q->out */
    int read_err;    /* errno of a failed read of q->body */
    int too_big;     /* the body went past q->mem_max */
    struct trove_bytes err; /* a non-2xx body, up to ERROR_MAX */
    struct cli_progress prog;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
    struct xfer *x = ctx;
    size_t n = size * nmemb;

    if (!x->have_status) {
        curl_easy_getinfo(x->r->curl, CURLINFO_RESPONSE_CODE, &x->status);
        x->have_status = 1;
        x->ok = x->status >= 200 && x->status < 300;
    }
    if (!x->ok) {
        size_t keep = ERROR_MAX - x->err.len < n ? ERROR_MAX - x->err.len : n;
        if (keep && trove_bytes_append(&x->err, p, keep) != TROVE_OK)
            return 0;
        return n;
    }
    x->q->bytes += n;
    if (x->q->out) {
        if (n && fwrite(p, 1, n, x->q->out) != n) {
            x->write_err = errno ? errno : EIO;
            return 0; /* CURLE_WRITE_ERROR */
        }
        return n;
    }
    if (x->q->mem) {
        if (x->q->mem->len + n > x->q->mem_max ||
            trove_bytes_append(x->q->mem, p, n) != TROVE_OK) {
            x->too_big = 1;
            return 0;
        }
    }
    return n;
}

static size_t on_upload(char *p, size_t size, size_t nmemb, void *ctx)
{
    struct xfer *x = ctx;
    size_t got = fread(p, 1, size * nmemb, x->q->body);
    if (got == 0 && ferror(x->q->body)) {
        x->read_err = errno ? errno : EIO;
        return CURL_READFUNC_ABORT;
    }
    return got;
}

static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    struct xfer *x = ctx;
    if (caught)
        return 1; /* CURLE_ABORTED_BY_CALLBACK */
    if (x->q->body) {
        x->prog.total = (uint64_t)ultotal;
        cli_progress_update(&x->prog, (uint64_t)ulnow);
    } else {
        x->prog.total = (uint64_t)dltotal;
        cli_progress_update(&x->prog, (uint64_t)dlnow);
    }
    return 0;
}

/* s[0..n) as one printable line in out (control bytes as '?'), cut at MESSAGE_MAX. */
static void one_line(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap && i < MESSAGE_MAX; i++)
        out[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    if (n > MESSAGE_MAX && o + 4 < cap) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = 0;
}

/* The error line for a status that is not 2xx: the service's message and code. */
static int status_error(struct xfer *x, const char *url)
{
    char msg[MESSAGE_MAX + 8] = "", code[64] = "", hint[160] = "";
    json_t *j = x->err.len ? json_loadb((const char *)x->err.ptr, x->err.len, 0, NULL) : NULL;
    json_t *e = json_is_object(j) ? json_object_get(j, "error") : NULL;
    json_t *c = json_is_object(j) ? json_object_get(j, "code") : NULL;

    if (json_is_string(e))
        one_line(json_string_value(e), json_string_length(e), msg, sizeof msg);
    else if (x->err.len) /* not the API's JSON: its first line */
        one_line((const char *)x->err.ptr, strcspn((const char *)x->err.ptr, "\r\n") < x->err.len
                                                ? strcspn((const char *)x->err.ptr, "\r\n")
                                                : x->err.len,
                 msg, sizeof msg);
    if (json_is_string(c))
        one_line(json_string_value(c), json_string_length(c), code, sizeof code);
    json_decref(j);
    if (x->status == 401)
        snprintf(hint, sizeof hint, x->r->token[0] ? "; the service refused the token given"
                                                   : "; the service needs a token: give "
                                                     "--token-file FILE or set TROVE_TOKEN");
    else if (x->status == 404 && !code[0])
        snprintf(hint, sizeof hint, "; is this a trove service with the HTTP API?");
    else if (x->status >= 300 && x->status < 400)
        snprintf(hint, sizeof hint, "; redirects are not followed: give the URL it names");
    if (!msg[0])
        return cli_error(x->r->cmd, "%s: the service answered HTTP %ld%s%s%s", url, x->status,
                         code[0] ? " " : "", code, hint);
    return cli_error(x->r->cmd, "%s: %s (HTTP %ld%s%s%s)", url, msg, x->status,
                     code[0] ? " " : "", code, hint);
}

int cli_remote_do(struct cli_remote *r, struct cli_request *q)
{
    static int global_done;
    CURL *h;
    struct curl_slist *headers = NULL, *hl;
    char url[4096 + 64], auth[sizeof r->token + 32], errbuf[CURL_ERROR_SIZE] = "";
    struct xfer x;
    CURLcode cc;
    int status = 1;

    memset(&x, 0, sizeof x);
    x.r = r;
    x.q = q;
    q->status = 0;
    q->bytes = 0;
    if ((size_t)snprintf(url, sizeof url, "%s%s", r->base, q->path) >= sizeof url)
        return cli_error(r->cmd, "%s%s: the URL is too long", r->base, q->path);
    if (!global_done) {
        static int loaded;
        static const char *const names[] = {CLI_CURL_FUNCS(CLI_DL_NAME)};
        char why[300];
        if (cli_dl_load(&loaded, TROVE_SONAME_CURL, names, sizeof names / sizeof *names,
                        (void **)&cli_curl, why, sizeof why) != 0)
            return cli_error(r->cmd, "--url needs libcurl: %s", why);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            return cli_error(r->cmd, "libcurl did not start");
        global_done = 1;
    }
    if (!r->curl && !(r->curl = curl_easy_init()))
        return cli_error(r->cmd, "out of memory");
    h = r->curl;
    curl_easy_reset(h); /* the connection stays in the handle's cache */
    curl_easy_setopt(h, CURLOPT_URL, url);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "trove/" TROVE_VERSION);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
    /* A body the service sends compressed is inflated as it comes. */
    curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
    if (r->token[0]) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", r->token);
        if (!(hl = curl_slist_append(headers, auth)))
            goto nomem;
        headers = hl;
    }
    if (q->body) {
        /* Posted from the file with its length known: no chunked request body, and no
         * "Expect: 100-continue" wait for a service that does not answer it. */
        if (!(hl = curl_slist_append(headers, "Content-Type: application/octet-stream")) ||
            !(headers = hl, hl = curl_slist_append(headers, "Expect:")))
            goto nomem;
        headers = hl;
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_upload);
        curl_easy_setopt(h, CURLOPT_READDATA, &x);
    }
    if (headers)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    cli_progress_begin(&x.prog, q->progress ? q->progress : "", 0);
    x.prog.active = x.prog.active && q->progress;
    cc = curl_easy_perform(h);
    cli_progress_end(&x.prog);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &q->status);
    if (!x.have_status) { /* no body at all: the status decides */
        x.status = q->status;
        x.ok = x.status >= 200 && x.status < 300;
    }
    if (cc == CURLE_ABORTED_BY_CALLBACK && caught) {
        cli_error(r->cmd, "%s: interrupted (%s)", url, caught == SIGINT ? "SIGINT" : "SIGTERM");
        status = 128 + caught;
        goto out;
    }
    if (x.read_err) {
        cli_error(r->cmd, "reading %s: %s", q->body_name ? q->body_name : "the input",
                  strerror(x.read_err));
        goto out;
    }
    if (x.write_err) {
        cli_error(r->cmd, "writing %s: %s", q->out_name ? q->out_name : "the output",
                  strerror(x.write_err));
        goto out;
    }
    if (x.too_big) {
        cli_error(r->cmd, "%s: the answer is over %zu bytes (or out of memory)", url, q->mem_max);
        goto out;
    }
    /* A status that is not 2xx wins over a transfer that broke after it (the service may
     * close an upload it refused before reading it all). */
    if (!x.ok && (cc == CURLE_OK || x.have_status)) {
        if (!q->quiet_status)
            status_error(&x, url);
        goto out;
    }
    if (cc != CURLE_OK) {
        const char *m = errbuf[0] ? errbuf : curl_easy_strerror(cc);
        /* The body was the answer, then broke off: what came is not all of it. */
        cli_error(r->cmd, "%s: %s%s", url, m,
                  cc == CURLE_COULDNT_CONNECT ? " (is `trove serve` running there?)"
                  : x.ok && q->bytes ? " (the answer is incomplete)"
                                     : "");
        goto out;
    }
    status = 0;
    goto out;
nomem:
    cli_error(r->cmd, "out of memory");
out:
    curl_slist_free_all(headers);
    trove_bytes_free(&x.err);
    return status;
}
