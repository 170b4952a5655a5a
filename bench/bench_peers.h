/*
 * bench_peers.h: the compressors `trove bench wire` and `trove bench bitpack` measure trove
 * against (lz4, xz's liblzma, brotli, streamvbyte), in a -DTROVE_BENCH_PEERS=ON build.
 * They are loaded when a benchmark starts (cli_dl.h), not when the program does: a command
 * that is not a benchmark does not load them. bench_wire.c and bench_bitpack.c include this
 * instead of the libraries' headers; the calls go through the tables bench_peers_load fills.
 */
#ifndef TROVE_BENCH_PEERS_H
#define TROVE_BENCH_PEERS_H

#if TROVE_BENCH_PEERS

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <lz4.h>
#include <lzma.h>
#include <streamvbyte.h>

#include "cli_dl.h"

#define BENCH_LZ4_FUNCS(X) X(LZ4_compressBound) X(LZ4_compress_default) X(LZ4_decompress_safe)
#define BENCH_LZMA_FUNCS(X)                                                                   \
    X(lzma_lzma_preset) X(lzma_stream_buffer_bound) X(lzma_stream_buffer_encode)              \
    X(lzma_stream_buffer_decode)
#define BENCH_BROTLIENC_FUNCS(X) X(BrotliEncoderCompress) X(BrotliEncoderMaxCompressedSize)
#define BENCH_BROTLIDEC_FUNCS(X) X(BrotliDecoderDecompress)
#define BENCH_SVB_FUNCS(X) X(streamvbyte_encode) X(streamvbyte_decode) /* _max_: inline */

struct bench_lz4 { BENCH_LZ4_FUNCS(CLI_DL_FIELD) };
struct bench_lzma { BENCH_LZMA_FUNCS(CLI_DL_FIELD) };
struct bench_brotlienc { BENCH_BROTLIENC_FUNCS(CLI_DL_FIELD) };
struct bench_brotlidec { BENCH_BROTLIDEC_FUNCS(CLI_DL_FIELD) };
struct bench_svb { BENCH_SVB_FUNCS(CLI_DL_FIELD) };
extern struct bench_lz4 bench_lz4;
extern struct bench_lzma bench_lzma;
extern struct bench_brotlienc bench_brotlienc;
extern struct bench_brotlidec bench_brotlidec;
extern struct bench_svb bench_svb;

#define LZ4_compressBound (bench_lz4.LZ4_compressBound)
#define LZ4_compress_default (bench_lz4.LZ4_compress_default)
#define LZ4_decompress_safe (bench_lz4.LZ4_decompress_safe)
#define lzma_lzma_preset (bench_lzma.lzma_lzma_preset)
#define lzma_stream_buffer_bound (bench_lzma.lzma_stream_buffer_bound)
#define lzma_stream_buffer_encode (bench_lzma.lzma_stream_buffer_encode)
#define lzma_stream_buffer_decode (bench_lzma.lzma_stream_buffer_decode)
#define BrotliEncoderCompress (bench_brotlienc.BrotliEncoderCompress)
#define BrotliEncoderMaxCompressedSize (bench_brotlienc.BrotliEncoderMaxCompressedSize)
#define BrotliDecoderDecompress (bench_brotlidec.BrotliDecoderDecompress)
#define streamvbyte_encode (bench_svb.streamvbyte_encode)
#define streamvbyte_decode (bench_svb.streamvbyte_decode)

#endif

/* Load the peers' libraries (once). 0, or 1 after one error line naming the missing one
 * (cmd: the command, for the line). Without TROVE_BENCH_PEERS: 0, nothing to load. */
int bench_peers_load(const char *cmd);

#endif
