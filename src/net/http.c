/*
 * http.c: a request head and a WebSocket frame header read from bytes, and an answer's head
 * written (http.h has the grammar and the trust rules). The scan keeps its place between
 * calls, so a head that comes a byte at a time costs each byte once; each line is checked
 * when its end arrives, and a line over its limit is refused as soon as it passes it, so a
 * client can hold no more than a line's worth of the service's attention.
 */
#include "http.h"
#include "api.h"
#include "common/utf8.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int fail(struct trove__http_fail *f, unsigned status, const char *code, const char *fmt,
                const char *arg)
{
    f->status = status;
    f->code = code;
    snprintf(f->msg, sizeof f->msg, fmt, arg ? arg : "");
    return -1;
}

/* RFC 9110 5.6.2: tchar */
static int tchar(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static const char *const fields[TROVE__H_COUNT] = {
    "host", "content-length", "transfer-encoding", "connection", "upgrade", "origin",
    "authorization", "cookie", "expect", "content-type", "sec-websocket-key",
    "sec-websocket-version", "sec-websocket-protocol", "sec-fetch-site", "x-trove-request"};

/* The request line, line[0..n) without its end. */
static int request_line(const char *line, size_t n, struct trove__http_head *h,
                        struct trove__http_fail *f)
{
    static const char *const refused[] = {"HEAD", "PUT", "PATCH", "OPTIONS", "CONNECT", "TRACE"};
    size_t m = 0, t, v;

    while (m < n && tchar((unsigned char)line[m]))
        m++;
    if (m == 0 || m >= n || line[m] != ' ')
        return fail(f, 400, "bad_request", "the request line is not METHOD TARGET HTTP/1.1%s",
                    NULL);
    if (m > TROVE__HTTP_METHOD_MAX)
        return fail(f, 501, "not_implemented", "no method of this service is that long%s", NULL);
    memcpy(h->method, line, m);
    h->method[m] = 0;
    if (!strcmp(h->method, "GET"))
        h->route_method = TROVE__GET;
    else if (!strcmp(h->method, "POST"))
        h->route_method = TROVE__POST;
    else if (!strcmp(h->method, "DELETE"))
        h->route_method = TROVE__DELETE;
    else {
        for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
            if (!strcmp(h->method, refused[i]))
                return fail(f, 405, "method_not_allowed",
                            "%s is not a method of this service (GET, POST and DELETE are)",
                            h->method);
        return fail(f, 501, "not_implemented",
                    "%s is not a method of this service (GET, POST and DELETE are)", h->method);
    }
    t = m + 1;
    for (v = t; v < n && line[v] != ' '; v++) {
        unsigned char c = (unsigned char)line[v];
        if (c < 0x21 || c > 0x7e)
            return fail(f, 400, "bad_request",
                        "the request target holds a byte that is not visible ASCII (escape it "
                        "as %%XX)%s", NULL);
    }
    if (v == t || v >= n)
        return fail(f, 400, "bad_request", "the request line is not METHOD TARGET HTTP/1.1%s",
                    NULL);
    if (line[t] != '/')
        return fail(f, 400, "bad_request",
                    "the request target must be a path starting with '/' (this is not a "
                    "proxy)%s", NULL);
    h->target = line + t;
    h->target_len = v - t;
    v++;
    if (n - v == 8 && !memcmp(line + v, "HTTP/1.", 7) && (line[v + 7] == '0' || line[v + 7] == '1')) {
        h->minor = line[v + 7] - '0';
        return 0;
    }
    if (n - v == 8 && !memcmp(line + v, "HTTP/", 5) && line[v + 5] >= '0' && line[v + 5] <= '9' &&
        line[v + 6] == '.' && line[v + 7] >= '0' && line[v + 7] <= '9')
        return fail(f, 505, "version_not_supported", "only HTTP/1.0 and HTTP/1.1 are spoken here%s",
                    NULL);
    return fail(f, 400, "bad_request", "the request line is not METHOD TARGET HTTP/1.1%s", NULL);
}

static int parse_length(const char *v, size_t n, uint64_t *out)
{
    uint64_t x = 0;

    if (n == 0 || n > 19)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    *out = x;
    return 0;
}

/* A header line, line[0..n) without its end. */
static int header_line(const char *line, size_t n, struct trove__http_head *h,
                       struct trove__http_fail *f)
{
    size_t k = 0, a, b;
    char name[32];

    if (line[0] == ' ' || line[0] == '\t')
        return fail(f, 400, "bad_request", "a header folded over lines is not taken%s", NULL);
    while (k < n && tchar((unsigned char)line[k]))
        k++;
    if (k == 0 || k >= n || line[k] != ':')
        return fail(f, 400, "bad_request",
                    "a header line is not NAME: VALUE (no space before the colon)%s", NULL);
    for (a = k + 1; a < n && (line[a] == ' ' || line[a] == '\t'); a++)
        ;
    for (b = n; b > a && (line[b - 1] == ' ' || line[b - 1] == '\t'); b--)
        ;
    for (size_t i = a; i < b; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(f, 400, "bad_request", "a header's value holds a control byte%s", NULL);
    }
    if (k >= sizeof name)
        return 0; /* longer than any name the service reads */
    for (size_t i = 0; i < k; i++)
        name[i] = (char)(line[i] >= 'A' && line[i] <= 'Z' ? line[i] + 32 : line[i]);
    name[k] = 0;
    for (int i = 0; i < TROVE__H_COUNT; i++) {
        if (strcmp(name, fields[i]) != 0)
            continue;
        if (h->f[i].v)
            return fail(f, 400, "bad_request", "the header %s is given twice", fields[i]);
        h->f[i].v = line + a;
        h->f[i].n = b - a;
        if (i == TROVE__H_CONTENT_LENGTH &&
            parse_length(line + a, b - a, &h->content_length) != 0)
            return fail(f, 400, "bad_request", "Content-Length is not a number of bytes%s", NULL);
        break;
    }
    return 0;
}

int trove__http_scan(struct trove__http_scan *s, const uint8_t *buf, size_t len,
                     struct trove__http_head *h, struct trove__http_fail *fail_out)
{
    if (s->pos == 0 && s->lines == 0)
        memset(h, 0, sizeof *h);
    while (s->pos < len) {
        const uint8_t *nl = memchr(buf + s->pos, '\n', len - s->pos);
        size_t end, n;
        if (!nl) {
            s->pos = len;
            break;
        }
        end = (size_t)(nl - buf);
        s->pos = end + 1;
        n = end - s->line;
        if (n > 0 && buf[end - 1] == '\r')
            n--;
        if (memchr(buf + s->line, '\r', n))
            return fail(fail_out, 400, "bad_request", "a CR inside a line of the head%s", NULL);
        if (n > TROVE__HTTP_LINE_MAX)
            return fail(fail_out, 413, "too_large", "%s is over 8192 bytes",
                        s->lines ? "a header line" : "the request line");
        if (memchr(buf + s->line, 0, n))
            return fail(fail_out, 400, "bad_request", "a NUL byte in the head%s", NULL);
        if (s->lines == 0) {
            if (n == 0) { /* RFC 9112 2.2: empty lines before the request line are skipped */
                if (end + 1 > 8)
                    return fail(fail_out, 400, "bad_request", "no request line%s", NULL);
                s->line = s->pos;
                continue;
            }
            if (request_line((const char *)buf + s->line, n, h, fail_out) != 0)
                return -1;
        } else if (n == 0) {
            h->head_len = s->pos;
            return (int)s->pos;
        } else {
            if ((unsigned)s->lines > TROVE__HTTP_HEADERS_MAX)
                return fail(fail_out, 413, "too_large", "more than 100 header lines%s", NULL);
            if (header_line((const char *)buf + s->line, n, h, fail_out) != 0)
                return -1;
        }
        s->lines++;
        s->line = s->pos;
    }
    if (s->pos - s->line > TROVE__HTTP_LINE_MAX + 2)
        return fail(fail_out, 413, "too_large", "%s is over 8192 bytes",
                    s->lines ? "a header line" : "the request line");
    if (len >= TROVE__HTTP_HEAD_MAX)
        return fail(fail_out, 413, "too_large", "the request's head is over 16384 bytes%s", NULL);
    return 0;
}

int trove__http_has_token(struct trove__http_value v, const char *token)
{
    size_t tn = strlen(token);

    for (size_t i = 0; v.v && i < v.n;) {
        size_t j = i, a, b;
        while (j < v.n && v.v[j] != ',')
            j++;
        for (a = i; a < j && (v.v[a] == ' ' || v.v[a] == '\t'); a++)
            ;
        for (b = j; b > a && (v.v[b - 1] == ' ' || v.v[b - 1] == '\t'); b--)
            ;
        if (b - a == tn && strncasecmp(v.v + a, token, tn) == 0)
            return 1;
        i = j + 1;
    }
    return 0;
}

int trove__http_copy(struct trove__http_value v, char *out, size_t cap)
{
    if (!v.v) {
        out[0] = 0;
        return 0;
    }
    if (v.n >= cap) {
        out[0] = 0;
        return -1;
    }
    memcpy(out, v.v, v.n);
    out[v.n] = 0;
    return 0;
}

const char *trove__http_reason(unsigned status)
{
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 302: return "Found";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 426: return "Upgrade Required";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

size_t trove__http_answer_head(char *out, size_t cap, unsigned status, const char *type,
                               int64_t len, const char *extra)
{
    int n;

    if (len >= 0)
        n = snprintf(out, cap,
                     "HTTP/1.1 %u %s\r\ncontent-type: %s\r\ncontent-length: %lld\r\n"
                     "cache-control: no-store\r\nconnection: close\r\n%s\r\n",
                     status, trove__http_reason(status), type, (long long)len,
                     extra ? extra : "");
    else
        n = snprintf(out, cap,
                     "HTTP/1.1 %u %s\r\ncontent-type: %s\r\ntransfer-encoding: chunked\r\n"
                     "cache-control: no-store\r\nconnection: close\r\n%s\r\n",
                     status, trove__http_reason(status), type, extra ? extra : "");
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

/* ---- WebSocket ---------------------------------------------------------------------------- */

int trove__ws_parse(const uint8_t *buf, size_t len, struct trove__ws_frame *f)
{
    size_t head = 2;
    uint64_t n;

    if (len < 2)
        return 0;
    f->fin = buf[0] >> 7;
    f->opcode = buf[0] & 15;
    if (buf[0] & 0x70)
        return -1002; /* an RSV bit, and no extension was agreed */
    if ((f->opcode > 2 && f->opcode < 8) || f->opcode > 10)
        return -1002;
    if (!(buf[1] & 0x80))
        return -1002; /* RFC 6455 5.1: a client masks every frame */
    n = buf[1] & 127;
    if (n == 126) {
        if (len < 4)
            return 0;
        n = (uint64_t)buf[2] << 8 | buf[3];
        head = 4;
    } else if (n == 127) {
        if (len < 10)
            return 0;
        n = 0;
        for (int i = 0; i < 8; i++)
            n = n << 8 | buf[2 + i];
        if (n >> 63)
            return -1002;
        head = 10;
    }
    /* A control frame is whole and short, its length in the 7-bit form (5.5, 5.2). */
    if (f->opcode >= 8 && (!f->fin || head != 2 || n > TROVE__WS_CONTROL_MAX))
        return -1002;
    if (len < head + 4)
        return 0;
    memcpy(f->mask, buf + head, 4);
    f->len = n;
    f->head = head + 4;
    return (int)f->head;
}

size_t trove__ws_head(uint8_t out[10], int opcode, uint64_t len)
{
    out[0] = (uint8_t)(0x80 | opcode);
    if (len < 126) {
        out[1] = (uint8_t)len;
        return 2;
    }
    if (len < 65536) {
        out[1] = 126;
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
    return 10;
}

int trove__ws_close_ok(const uint8_t *b, size_t n)
{
    unsigned code;

    if (n == 0)
        return 1;
    if (n == 1)
        return 0;
    code = (unsigned)b[0] << 8 | b[1];
    if (!((code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
          (code >= 3000 && code <= 4999)))
        return 0;
    return trove__utf8_valid_prefix(b + 2, n - 2) == n - 2;
}
