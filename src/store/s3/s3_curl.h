/*
 * s3_curl.h (internal): libcurl, loaded when the first s3:// store opens (common/dl.h), not
 * when the program starts: it brings TLS, Kerberos, LDAP and SSH libraries with it, 40 in
 * all, which a command that never reaches S3 should not pay for. libcrypto's SHA-256 (the
 * body hash of a request) comes the same way; libcurl has loaded libcrypto by then.
 *
 * Every file of src/store/s3/ includes this instead of <curl/curl.h>: the calls below go
 * through the table trove__s3_libs_load fills, with the types of libcurl's own header.
 */
#ifndef TROVE_S3_CURL_H
#define TROVE_S3_CURL_H

#define CURL_DISABLE_TYPECHECK /* its checks are macros over the names renamed below */
#include <curl/curl.h>
#include <openssl/evp.h>

#include "common/dl.h"

#define TROVE__S3_CURL_FUNCS(X)                                                               \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset)            \
    X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_header) X(curl_easy_strerror)       \
    X(curl_easy_escape) X(curl_free) X(curl_slist_append) X(curl_slist_free_all)             \
    X(curl_multi_init) X(curl_multi_cleanup) X(curl_multi_add_handle)                        \
    X(curl_multi_remove_handle) X(curl_multi_setopt) X(curl_multi_perform)                   \
    X(curl_multi_poll) X(curl_multi_wakeup) X(curl_multi_info_read) X(curl_multi_strerror)
#define TROVE__S3_CRYPTO_FUNCS(X) X(EVP_Digest) X(EVP_sha256)

struct trove__s3_curl {
    TROVE__S3_CURL_FUNCS(TROVE__DL_FIELD)
};
struct trove__s3_crypto {
    TROVE__S3_CRYPTO_FUNCS(TROVE__DL_FIELD)
};
extern struct trove__s3_curl trove__s3_curl;
extern struct trove__s3_crypto trove__s3_crypto;

/* Load libcurl and libcrypto (once) and initialise libcurl. TROVE_OK, or TROVE_ERR_NOTFOUND
 * (a library missing: diag names it), TROVE_ERR_NOMEM (curl_global_init failed). */
int trove__s3_libs_load(struct trove_diag *diag);

/* curl.h makes these four function-like macros that call themselves (to count arguments) */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_multi_setopt
#undef curl_share_setopt

#define curl_global_init (trove__s3_curl.curl_global_init)
#define curl_easy_init (trove__s3_curl.curl_easy_init)
#define curl_easy_cleanup (trove__s3_curl.curl_easy_cleanup)
#define curl_easy_reset (trove__s3_curl.curl_easy_reset)
#define curl_easy_setopt (trove__s3_curl.curl_easy_setopt)
#define curl_easy_getinfo (trove__s3_curl.curl_easy_getinfo)
#define curl_easy_header (trove__s3_curl.curl_easy_header)
#define curl_easy_strerror (trove__s3_curl.curl_easy_strerror)
#define curl_easy_escape (trove__s3_curl.curl_easy_escape)
#define curl_free (trove__s3_curl.curl_free)
#define curl_slist_append (trove__s3_curl.curl_slist_append)
#define curl_slist_free_all (trove__s3_curl.curl_slist_free_all)
#define curl_multi_init (trove__s3_curl.curl_multi_init)
#define curl_multi_cleanup (trove__s3_curl.curl_multi_cleanup)
#define curl_multi_add_handle (trove__s3_curl.curl_multi_add_handle)
#define curl_multi_remove_handle (trove__s3_curl.curl_multi_remove_handle)
#define curl_multi_setopt (trove__s3_curl.curl_multi_setopt)
#define curl_multi_perform (trove__s3_curl.curl_multi_perform)
#define curl_multi_poll (trove__s3_curl.curl_multi_poll)
#define curl_multi_wakeup (trove__s3_curl.curl_multi_wakeup)
#define curl_multi_info_read (trove__s3_curl.curl_multi_info_read)
#define curl_multi_strerror (trove__s3_curl.curl_multi_strerror)
#define EVP_Digest (trove__s3_crypto.EVP_Digest)
#define EVP_sha256 (trove__s3_crypto.EVP_sha256)

#endif
