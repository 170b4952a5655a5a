/*
 * fuzz_viewer.c: libFuzzer target for what a service sends a viewer (src/net/viewer.c, the
 * client of `trove watch` and `trove bench serve`): the input is the upgrade response and
 * the WebSocket frames after it. Half of the inputs get the one Sec-WebSocket-Accept the
 * fixed key asks for spliced in front, so that the frame parser is reached. Oracles: every
 * message handed to a callback lies inside the input or the client's own buffer (ASan), is
 * at most one wire frame's largest size, and a binary message is passed to the wire decoder
 * as the viewer's callbacks do.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/live.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY64 "dGhlIHNhbXBsZSBub25jZQ==" /* RFC 6455's example key */
/* Its answer, base64(SHA-1(key + GUID)), from the RFC: s3pPLMBiTxaQ9kYGzzhZRbK+xOo= */
static const char head[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                           "Connection: Upgrade\r\n"
                           "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";

static struct trove_wire_decoder *dec;
static struct trove_event ev[TROVE_WIRE_MAX_EVENTS];

static int on_text(void *ctx, const char *json, size_t len)
{
    (void)ctx;
    if (len > TROVE_WIRE_HEADER_SIZE + TROVE_WIRE_MAX_PAYLOAD || json[len] != 0)
        abort();
    return 0;
}

static int on_frame(void *ctx, const uint8_t *frame, size_t len)
{
    struct trove_wire_frame fr;
    (void)ctx;
    if (len > TROVE_WIRE_HEADER_SIZE + TROVE_WIRE_MAX_PAYLOAD)
        abort();
    trove_wire_decode(dec, frame, len, ev, TROVE_WIRE_MAX_EVENTS, NULL, &fr, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_live_view_options vo;
    uint8_t *buf;
    size_t n = size;
    int sv[2];

    if (size < 1)
        return 0;
    if (!dec && trove_wire_decoder_new(&dec) != TROVE_OK)
        abort();
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        abort();
    memset(&vo, 0, sizeof vo);
    vo.capture = "fuzz";
    vo.on_text = on_text;
    vo.on_frame = on_frame;
    if (data[0] & 1) { /* the right head, then the rest as frames */
        n = sizeof head - 1 + size - 1;
        if (!(buf = malloc(n)))
            abort();
        memcpy(buf, head, sizeof head - 1);
        memcpy(buf + sizeof head - 1, data + 1, size - 1);
    } else {
        if (!(buf = malloc(n)))
            abort();
        memcpy(buf, data, size);
    }
    trove__live_view_bytes(&vo, buf, n, KEY64, sv[0], NULL);
    free(buf);
    close(sv[0]);
    close(sv[1]);
    return 0;
}
