/*
 * cli_curl.h: libcurl for the HTTP client of a remote service (cli_remote.c), loaded by the
 * first request (cli_dl.h), with the types of libcurl's own header. cli_remote.c includes
 * this instead of <curl/curl.h>.
 */
#ifndef TROVE_CLI_CURL_H
#define TROVE_CLI_CURL_H

#define CURL_DISABLE_TYPECHECK /* its checks are macros over the names renamed below */
#include <curl/curl.h>

#include "cli_dl.h"

#define CLI_CURL_FUNCS(X)                                                                     \
    X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup) X(curl_easy_reset)            \
    X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_perform) X(curl_easy_strerror)      \
    X(curl_slist_append) X(curl_slist_free_all)

struct cli_curl {
    CLI_CURL_FUNCS(CLI_DL_FIELD)
};
extern struct cli_curl cli_curl;

/* curl.h makes these function-like macros that call themselves (to count arguments) */
#undef curl_easy_setopt
#undef curl_easy_getinfo

#define curl_global_init (cli_curl.curl_global_init)
#define curl_easy_init (cli_curl.curl_easy_init)
#define curl_easy_cleanup (cli_curl.curl_easy_cleanup)
#define curl_easy_reset (cli_curl.curl_easy_reset)
#define curl_easy_setopt (cli_curl.curl_easy_setopt)
#define curl_easy_getinfo (cli_curl.curl_easy_getinfo)
#define curl_easy_perform (cli_curl.curl_easy_perform)
#define curl_easy_strerror (cli_curl.curl_easy_strerror)
#define curl_slist_append (cli_curl.curl_slist_append)
#define curl_slist_free_all (cli_curl.curl_slist_free_all)

#endif
