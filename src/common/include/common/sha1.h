/*
 * sha1.h (internal): SHA-1 (FIPS 180-4) and base64 (RFC 4648), for the WebSocket handshake
 * only (RFC 6455 4.2.2: the accept key is base64 of SHA-1 of the client's key and a GUID),
 * which the service and its viewer client both make. Not for anything that needs a secure
 * hash: content is named by xxh3 (digest.h), S3 requests signed with libcrypto's SHA-256.
 */
#ifndef TROVE_SHA1_H
#define TROVE_SHA1_H

#include <stddef.h>
#include <stdint.h>

void trove__sha1(const uint8_t *msg, size_t len, uint8_t out[20]);

/* base64 of in[0..n) into out, NUL-terminated: out needs 4 * ((n + 2) / 3) + 1 bytes. */
void trove__base64(const uint8_t *in, size_t n, char *out);

/* The Sec-WebSocket-Accept of a Sec-WebSocket-Key (key[0..n), as sent): 28 characters and
 * a NUL into out. */
void trove__ws_accept_key(const char *key, size_t n, char out[29]);

#endif
