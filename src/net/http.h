/*
 * http.h (internal): the service's HTTP/1.1 (RFC 9112) and WebSocket (RFC 6455) wire
 * without the sockets: a request head read from bytes as they arrive, a client's frame
 * header, the head of an answer. Pure functions of their arguments, so that the fuzz target
 * fuzz_http_parse drives them from bytes and the tests call them directly.
 *
 * A request head, as the service takes it:
 *
 *   request-line = method SP request-target SP HTTP-version (CR)LF      <= 8192 bytes
 *   header-line  = field-name ":" OWS field-value OWS (CR)LF            <= 8192 bytes each
 *   ... at most 100 header lines, then an empty line; the head <= 16 KiB in all
 *
 * Trust rules: the head is scanned a line at a time as bytes come (each byte is looked at
 * once, whatever the pieces they come in), and refused at the first line that breaks a
 * rule, without waiting for the rest: a request line or a header line over its limit (413),
 * a method the service does not take (405 for HEAD, PUT, PATCH, OPTIONS, CONNECT, TRACE;
 * 501 for any other), a version other than HTTP/1.0 and 1.1 (505), a target that is not
 * origin-form (a path starting with '/'; 400) or holds a byte outside 0x21..0x7E, a field
 * name that is not a token or has space before its colon, a folded line, a control byte in
 * a value, a header the service reads given twice, a Content-Length that is not a number
 * (400). Header names are matched whole and without case; the values kept are pointers into
 * the caller's buffer, which must not move while the head is used.
 */
#ifndef TROVE_NET_HTTP_H
#define TROVE_NET_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define TROVE__HTTP_LINE_MAX 8192u    /* the request line, and each header line */
#define TROVE__HTTP_HEAD_MAX 16384u   /* the whole head, its empty line included */
#define TROVE__HTTP_HEADERS_MAX 100u  /* header lines */
#define TROVE__HTTP_METHOD_MAX 16u

/* The headers the service reads; any other is skipped. */
enum trove__http_field {
    TROVE__H_HOST,
    TROVE__H_CONTENT_LENGTH,
    TROVE__H_TRANSFER_ENCODING,
    TROVE__H_CONNECTION,
    TROVE__H_UPGRADE,
    TROVE__H_ORIGIN,
    TROVE__H_AUTHORIZATION,
    TROVE__H_COOKIE,
    TROVE__H_EXPECT,
    TROVE__H_CONTENT_TYPE,
    TROVE__H_WS_KEY,
    TROVE__H_WS_VERSION,
    TROVE__H_WS_PROTOCOL,
    TROVE__H_SEC_FETCH_SITE,
    TROVE__H_X_TROVE,
    TROVE__H_COUNT
};

/* How far a scan has come: zeroed before the first call. */
struct trove__http_scan {
    size_t pos;  /* bytes looked at */
    size_t line; /* where the current line starts */
    int lines;   /* lines complete, the request line included */
};

struct trove__http_value {
    const char *v; /* NULL: the header is absent */
    size_t n;
};

struct trove__http_head {
    char method[TROVE__HTTP_METHOD_MAX + 1];
    int route_method;     /* enum trove__method (api.h): GET, POST, DELETE */
    const char *target;   /* origin-form: '/' and what follows, up to the space */
    size_t target_len;
    int minor;            /* HTTP/1.minor: 0 or 1 */
    struct trove__http_value f[TROVE__H_COUNT];
    uint64_t content_length; /* when f[TROVE__H_CONTENT_LENGTH].v */
    size_t head_len;      /* bytes of the head, its empty line included */
};

/* Why a head was refused: the answer's status, code (as docs/serve.md lists them) and
 * message. */
struct trove__http_fail {
    unsigned status;
    const char *code;
    char msg[200];
};

/*
 * Look at buf[0..len) (the same buffer, grown, at every call; s carries what was looked at
 * before) for a whole request head. Returns its length (> 0) when its empty line has come, 0
 * when it needs more bytes, -1 when it is refused (*fail says how; the request line's fields
 * are filled as soon as it is read, so a refusal of a later line still knows the method).
 */
int trove__http_scan(struct trove__http_scan *s, const uint8_t *buf, size_t len,
                     struct trove__http_head *h, struct trove__http_fail *fail);

/* Does the comma-separated value hold this token (without case)? "Upgrade" in
 * "keep-alive, Upgrade", say. */
int trove__http_has_token(struct trove__http_value v, const char *token);

/* The value as a NUL-terminated string into out (cap bytes; "" when absent); -1 when it
 * does not fit. */
int trove__http_copy(struct trove__http_value v, char *out, size_t cap);

/* An answer's head: the status line and "content-type", "content-length" (len; or
 * "transfer-encoding: chunked" when len is negative), "cache-control: no-store" and
 * "connection: close", then extra (whole "name: value\r\n" lines, may be NULL) and the empty
 * line. The length written, or 0 when it does not fit in cap. */
size_t trove__http_answer_head(char *out, size_t cap, unsigned status, const char *type,
                               int64_t len, const char *extra);

const char *trove__http_reason(unsigned status);

/* ---- WebSocket frames (RFC 6455 5.2) ---------------------------------------------------- */

#define TROVE__WS_CONTROL_MAX 125u

enum { TROVE__WS_CONT = 0, TROVE__WS_TEXT = 1, TROVE__WS_BINARY = 2, TROVE__WS_CLOSE = 8,
       TROVE__WS_PING = 9, TROVE__WS_PONG = 10 };

struct trove__ws_frame {
    int fin, opcode;
    uint64_t len;     /* the payload's */
    uint8_t mask[4];
    size_t head;      /* bytes of the header */
};

/*
 * A client's frame header at buf[0..len): its size (> 0) with *f filled, 0 when more bytes
 * are needed, or -1002 (a protocol error: an RSV bit, a reserved opcode, a control frame
 * fragmented, over 125 bytes or with a 16- or 64-bit length, an unmasked frame, a length
 * with its top bit set).
 */
int trove__ws_parse(const uint8_t *buf, size_t len, struct trove__ws_frame *f);

/* A server frame's header (FIN set, unmasked) for a payload of len bytes: its size (2, 4 or
 * 10) written into out. */
size_t trove__ws_head(uint8_t out[10], int opcode, uint64_t len);

/* May a peer close with this body (RFC 6455 5.5.1, 7.4)? Nothing, or a code a peer may send
 * (1000-1003, 1007-1011, 3000-4999) and a UTF-8 reason. */
int trove__ws_close_ok(const uint8_t *b, size_t n);

#endif
