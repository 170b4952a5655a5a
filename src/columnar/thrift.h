/*
 * thrift.h (internal to src/columnar): the Thrift compact protocol, the subset Parquet's
 * footer and page headers use (apache/thrift doc/specs/thrift-compact-protocol.md).
 *
 *   field header   1 byte: (id delta 1..15) << 4 | type, or type then a zigzag i16 varint id
 *   bool field     the type itself: 1 true, 2 false (no value bytes)
 *   i8             1 byte; i16, i32, i64: zigzag varint; double: 8 bytes LE
 *   binary         varint length, bytes
 *   list, set      1 byte: size << 4 | elem type (size < 15), or 0xF? then varint size;
 *                  bool elements are 1 byte each (1 true, 2 or 0 false)
 *   map            varint size, then (if size > 0) 1 byte key type << 4 | value type
 *   struct         fields, then a 0 byte (stop)
 *
 * The writer keeps the last field id of each open struct and a sticky error, so encoders
 * are straight-line calls checked once at the end. The reader checks every bound, the
 * wire type of every field it takes (a field of the wrong type is TROVE_ERR_CORRUPT), a
 * nesting depth limit, and skips fields it does not know, of any type.
 */
#ifndef TROVE_THRIFT_H
#define TROVE_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#include "trove/common.h"

enum {
    TROVE_TT_STOP = 0,
    TROVE_TT_TRUE = 1, /* bool field true; as a list element type: bool */
    TROVE_TT_FALSE = 2,
    TROVE_TT_I8 = 3,
    TROVE_TT_I16 = 4,
    TROVE_TT_I32 = 5,
    TROVE_TT_I64 = 6,
    TROVE_TT_DOUBLE = 7,
    TROVE_TT_BINARY = 8,
    TROVE_TT_LIST = 9,
    TROVE_TT_SET = 10,
    TROVE_TT_MAP = 11,
    TROVE_TT_STRUCT = 12
};

#define TROVE_THRIFT_MAX_DEPTH 32

/* ---- writer ---- */
struct trove__tw {
    struct trove_bytes *out;
    int16_t last[TROVE_THRIFT_MAX_DEPTH];
    int depth; /* open structs; last[depth - 1] is the current struct's last field id */
    int err;   /* sticky: the first error */
};

/* Start writing into out (appends); the top-level struct is open. */
void trove__tw_init(struct trove__tw *w, struct trove_bytes *out);
/* Close the top-level struct (its stop byte). Returns the first error, or TROVE_OK. */
int trove__tw_finish(struct trove__tw *w);

void trove__tw_i32(struct trove__tw *w, int16_t id, int32_t v);
void trove__tw_i64(struct trove__tw *w, int16_t id, int64_t v);
void trove__tw_i16(struct trove__tw *w, int16_t id, int16_t v);
void trove__tw_i8(struct trove__tw *w, int16_t id, int8_t v);
void trove__tw_bool(struct trove__tw *w, int16_t id, int v);
void trove__tw_binary(struct trove__tw *w, int16_t id, const void *p, size_t n);
/* A struct field: its fields follow, then trove__tw_struct_end. */
void trove__tw_struct_begin(struct trove__tw *w, int16_t id);
void trove__tw_struct_end(struct trove__tw *w);
/* A list field of n elements of elem_type; then n elements written with the _elem calls. */
void trove__tw_list_begin(struct trove__tw *w, int16_t id, int elem_type, size_t n);
void trove__tw_elem_i32(struct trove__tw *w, int32_t v);
void trove__tw_elem_binary(struct trove__tw *w, const void *p, size_t n);
/* A struct element of a list: fields, then trove__tw_struct_end. */
void trove__tw_elem_struct_begin(struct trove__tw *w);

/* ---- reader ---- */
struct trove__tr {
    const uint8_t *buf;
    size_t len, pos;
    uint64_t base;  /* offset of buf[0] in the caller's input, for diag offsets */
    int depth;
    struct trove_diag *diag;
    const char *what; /* names the structure in messages, e.g. "footer" */
};

void trove__tr_init(struct trove__tr *r, const uint8_t *buf, size_t len, uint64_t base,
                    const char *what, struct trove_diag *diag);
/* Enter a struct (depth check). The top-level struct is entered by the caller too. */
int trove__tr_enter(struct trove__tr *r);
void trove__tr_leave(struct trove__tr *r);
/* The next field of the current struct: returns 1 with *type and *id (updates *last), 0
 * at the stop byte, or an error. A bool field's value is its type (TRUE/FALSE). */
int trove__tr_field(struct trove__tr *r, int16_t *last, int *type, int16_t *id);
/* Values of a field (or list element) whose wire type is type; a type that does not fit
 * is TROVE_ERR_CORRUPT naming field. */
int trove__tr_i32(struct trove__tr *r, int type, const char *field, int32_t *v);
int trove__tr_i64(struct trove__tr *r, int type, const char *field, int64_t *v);
int trove__tr_i8(struct trove__tr *r, int type, const char *field, int8_t *v);
int trove__tr_bool(struct trove__tr *r, int type, const char *field, int *v);
int trove__tr_binary(struct trove__tr *r, int type, const char *field, const uint8_t **p,
                     uint32_t *n);
/* A list (or set) header: *elem_type and *n (n checked against the bytes left). */
int trove__tr_list(struct trove__tr *r, int type, const char *field, int *elem_type,
                   uint32_t *n);
/* Check that a field is a struct (then call trove__tr_enter). */
int trove__tr_want(struct trove__tr *r, int type, int want, const char *field);
/* Skip a value of any type. */
int trove__tr_skip(struct trove__tr *r, int type);
/* An error at the current position. */
int trove__tr_fail(struct trove__tr *r, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
