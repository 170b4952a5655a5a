/*
 * sha1.c: SHA-1 and base64 for the WebSocket handshake (common/sha1.h). A straight
 * implementation of FIPS 180-4's rounds over 64-byte blocks, the padding made block by block
 * so that nothing is allocated; the handshake hashes 60 bytes, so speed does not matter.
 */
#include "common/sha1.h"

#include <stdio.h>
#include <string.h>

static uint32_t rol(uint32_t x, int n) { return x << n | x >> (32 - n); }

void trove__sha1(const uint8_t *msg, size_t len, uint8_t out[20])
{
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    uint8_t block[64];
    uint64_t bits = (uint64_t)len * 8;
    size_t total = (len + 9 + 63) / 64 * 64;

    for (size_t off = 0; off < total; off += 64) {
        uint32_t w[80], a, b, c, d, e;
        for (size_t i = 0; i < 64; i++) {
            size_t k = off + i;
            block[i] = k < len ? msg[k] : k == len ? 0x80 : 0;
        }
        if (off + 64 == total)
            for (int i = 0; i < 8; i++)
                block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
        for (int i = 0; i < 16; i++)
            w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
                   (uint32_t)block[4 * i + 2] << 8 | block[4 * i + 3];
        for (int i = 16; i < 80; i++)
            w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int i = 0; i < 80; i++) {
            uint32_t f, k, t;
            if (i < 20)
                f = (b & c) | (~b & d), k = 0x5A827999;
            else if (i < 40)
                f = b ^ c ^ d, k = 0x6ED9EBA1;
            else if (i < 60)
                f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
            else
                f = b ^ c ^ d, k = 0xCA62C1D6;
            t = rol(a, 5) + f + e + k + w[i];
            e = d, d = c, c = rol(b, 30), b = a, a = t;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
    }
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(h[i] >> (24 - 8 * j));
}

void trove__base64(const uint8_t *in, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;

    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) |
                     (i + 2 < n ? in[i + 2] : 0);
        out[o++] = tab[v >> 18 & 63];
        out[o++] = tab[v >> 12 & 63];
        out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = 0;
}

void trove__ws_accept_key(const char *key, size_t n, char out[29])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    uint8_t cat[128], digest[20];

    if (n > sizeof cat - (sizeof guid - 1))
        n = sizeof cat - (sizeof guid - 1); /* callers check the key's length first */
    memcpy(cat, key, n);
    memcpy(cat + n, guid, sizeof guid - 1);
    trove__sha1(cat, n + sizeof guid - 1, digest);
    trove__base64(digest, sizeof digest, out);
}
