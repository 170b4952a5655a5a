/*
 * zip_lib.h (internal): libzip, loaded when the first bundle is written or opened
 * (common/dl.h), not when the program starts: it brings libcrypto and libbz2 along, which a
 * command that never touches a bundle should not pay for. bundle_zip.c includes this
 * instead of <zip.h>; the calls below go through the table trove__zip_load fills, with the
 * types of libzip's own header.
 */
#ifndef TROVE_ZIP_LIB_H
#define TROVE_ZIP_LIB_H

#include <zip.h>

#include "common/dl.h"

#define TROVE__ZIP_FUNCS(X)                                                                   \
    X(zip_close) X(zip_discard) X(zip_error_code_system) X(zip_error_code_zip)               \
    X(zip_error_fini) X(zip_error_init) X(zip_error_init_with_code) X(zip_error_strerror)    \
    X(zip_error_system_type) X(zip_fclose) X(zip_file_add) X(zip_file_get_error)             \
    X(zip_file_set_external_attributes) X(zip_file_set_mtime) X(zip_file_strerror)           \
    X(zip_fopen_index) X(zip_fread) X(zip_get_error) X(zip_get_name) X(zip_get_num_entries)  \
    X(zip_open) X(zip_open_from_source) X(zip_set_file_compression) X(zip_source_buffer)     \
    X(zip_source_buffer_create) X(zip_source_close) X(zip_source_error)                      \
    X(zip_source_file_create) X(zip_source_free) X(zip_source_keep) X(zip_source_open)       \
    X(zip_source_read) X(zip_source_stat) X(zip_stat_index) X(zip_stat_init) X(zip_strerror)

struct trove__zip_api {
    TROVE__ZIP_FUNCS(TROVE__DL_FIELD)
};
extern struct trove__zip_api trove__zip_api;

/* Load libzip (once). TROVE_OK, or TROVE_ERR_NOTFOUND with diag naming it. */
int trove__zip_load(struct trove_diag *diag);

#define zip_close (trove__zip_api.zip_close)
#define zip_discard (trove__zip_api.zip_discard)
#define zip_error_code_system (trove__zip_api.zip_error_code_system)
#define zip_error_code_zip (trove__zip_api.zip_error_code_zip)
#define zip_error_fini (trove__zip_api.zip_error_fini)
#define zip_error_init (trove__zip_api.zip_error_init)
#define zip_error_init_with_code (trove__zip_api.zip_error_init_with_code)
#define zip_error_strerror (trove__zip_api.zip_error_strerror)
#define zip_error_system_type (trove__zip_api.zip_error_system_type)
#define zip_fclose (trove__zip_api.zip_fclose)
#define zip_file_add (trove__zip_api.zip_file_add)
#define zip_file_get_error (trove__zip_api.zip_file_get_error)
#define zip_file_set_external_attributes (trove__zip_api.zip_file_set_external_attributes)
#define zip_file_set_mtime (trove__zip_api.zip_file_set_mtime)
#define zip_file_strerror (trove__zip_api.zip_file_strerror)
#define zip_fopen_index (trove__zip_api.zip_fopen_index)
#define zip_fread (trove__zip_api.zip_fread)
#define zip_get_error (trove__zip_api.zip_get_error)
#define zip_get_name (trove__zip_api.zip_get_name)
#define zip_get_num_entries (trove__zip_api.zip_get_num_entries)
#define zip_open (trove__zip_api.zip_open)
#define zip_open_from_source (trove__zip_api.zip_open_from_source)
#define zip_set_file_compression (trove__zip_api.zip_set_file_compression)
#define zip_source_buffer (trove__zip_api.zip_source_buffer)
#define zip_source_buffer_create (trove__zip_api.zip_source_buffer_create)
#define zip_source_close (trove__zip_api.zip_source_close)
#define zip_source_error (trove__zip_api.zip_source_error)
#define zip_source_file_create (trove__zip_api.zip_source_file_create)
#define zip_source_free (trove__zip_api.zip_source_free)
#define zip_source_keep (trove__zip_api.zip_source_keep)
#define zip_source_open (trove__zip_api.zip_source_open)
#define zip_source_read (trove__zip_api.zip_source_read)
#define zip_source_stat (trove__zip_api.zip_source_stat)
#define zip_stat_index (trove__zip_api.zip_stat_index)
#define zip_stat_init (trove__zip_api.zip_stat_init)
#define zip_strerror (trove__zip_api.zip_strerror)

#endif
