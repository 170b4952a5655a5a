/*
 * test_dl.c: libraries loaded on first use (src/common/dl.c). A library that is there loads
 * and its functions answer as linked ones do; a missing library, or one without a function
 * the table names, is an error that names it and what needed it, leaves the table empty,
 * and is not tried again; the S3 backend's own table (libcurl and libcrypto) loads.
 */
#include <math.h>
#include <string.h>

#include "common/dl.h"
#include "store/s3/s3_curl.h"
#include "testutil.h"

#define M_FUNCS(X) X(cos) X(sqrt)
struct m_api {
    M_FUNCS(TROVE__DL_FIELD)
};

static void test_loads(void)
{
    static const char *const names[] = {M_FUNCS(TROVE__DL_NAME)};
    struct trove__dl_once once = {0};
    struct m_api m = {0};
    struct trove_diag d = {0};

    CHECK_EQ_INT(trove__dl_load(&once, "libm.so.6", names, 2, (void **)&m, "a test", &d),
                 TROVE_OK);
    CHECK(m.cos && m.sqrt);
    CHECK(m.sqrt(49.0) == 7.0);
    CHECK(m.cos(0.0) == 1.0);
    /* a second load is the first one's answer */
    CHECK_EQ_INT(trove__dl_load(&once, "libm.so.6", names, 2, (void **)&m, "a test", &d),
                 TROVE_OK);
}

static void test_missing_library(void)
{
    static const char *const names[] = {M_FUNCS(TROVE__DL_NAME)};
    struct trove__dl_once once = {0};
    struct m_api m = {0};
    struct trove_diag d = {0};

    CHECK_EQ_INT(trove__dl_load(&once, "libtrove-no-such.so.9", names, 2, (void **)&m,
                                "an s3:// store", &d),
                 TROVE_ERR_NOTFOUND);
    CHECK(strstr(d.msg, "an s3:// store needs libtrove-no-such.so.9") != NULL);
    CHECK(!m.cos && !m.sqrt);
    memset(&d, 0, sizeof d);
    CHECK_EQ_INT(trove__dl_load(&once, "libm.so.6", names, 2, (void **)&m, "again", &d),
                 TROVE_ERR_NOTFOUND); /* not retried, even under another name */
    CHECK(!m.cos);
}

static void test_missing_function(void)
{
    static const char *const names[] = {"cos", "trove_no_such_function"};
    struct trove__dl_once once = {0};
    struct m_api m = {0};
    struct trove_diag d = {0};

    CHECK_EQ_INT(trove__dl_load(&once, "libm.so.6", names, 2, (void **)&m, "a test", &d),
                 TROVE_ERR_NOTFOUND);
    CHECK(strstr(d.msg, "trove_no_such_function") != NULL);
    CHECK(!m.cos && !m.sqrt); /* nothing half-filled */
}

static void test_s3_libraries(void)
{
    struct trove_diag d = {0};
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;

    CHECK_EQ_INT(trove__s3_libs_load(&d), TROVE_OK);
    CHECK(curl_easy_init != NULL && EVP_Digest != NULL); /* the table, filled */
    /* SHA-256("abc"), FIPS 180-2 appendix B.1: ba7816bf... */
    CHECK_EQ_INT(EVP_Digest("abc", 3, md, &mdlen, EVP_sha256(), NULL), 1);
    CHECK_EQ_INT(mdlen, 32);
    CHECK(md[0] == 0xba && md[1] == 0x78 && md[2] == 0x16 && md[31] == 0xad);
    CURL *h = curl_easy_init();
    CHECK(h != NULL);
    CHECK_EQ_INT(curl_easy_setopt(h, CURLOPT_URL, "http://127.0.0.1:1/"), CURLE_OK);
    curl_easy_cleanup(h);
}

int main(int argc, char **argv)
{
    test_init(argc, argv);
    RUN(test_loads);
    RUN(test_missing_library);
    RUN(test_missing_function);
    RUN(test_s3_libraries);
    return test_done();
}
