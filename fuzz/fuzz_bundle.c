/*
 * fuzz_bundle.c: libFuzzer target for the capture bundle reader (src/columnar/bundle_zip.c, bundle_manifest.c).
 * The input is one zip archive, opened from memory. Oracles: opening with and without a
 * diag agrees, and a failure sets diag.code and leaves the output pointer alone; every
 * name of an opened bundle passes the name rule (a directory's without its trailing '/');
 * a directory is never found; a file in the bundle's folder (if any: it then holds the
 * manifest) is found at its own index by its name in the folder; each such entry
 * is read with a 1 MiB cap, and a read that succeeds appended exactly one entry whose
 * length a cap one byte smaller refuses with TROVE_ERR_LIMIT, leaving the buffer as it
 * was; a failed read sets diag.code and leaves the buffer as it was. An entry named
 * manifest.json that reads is also decoded as the manifest, and a manifest that decodes
 * must encode and decode back to the same struct.
 */
#include <stdlib.h>
#include <string.h>

#include "trove/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define READ_CAP (1u << 20)

static void check_manifest(const uint8_t *buf, size_t len)
{
    struct trove_bundle_manifest m, m2;
    struct trove_bytes enc = {0};
    struct trove_diag diag;
    int rc;

    memset(&m, 0, sizeof m);
    rc = trove_bundle_manifest_decode(buf, len, &m, &diag);
    if (rc != trove_bundle_manifest_decode(buf, len, &m2, NULL))
        abort();
    if (rc != TROVE_OK) {
        if (diag.code != rc)
            abort();
        return;
    }
    if (trove_bundle_manifest_encode(&m, &enc) != TROVE_OK)
        abort();
    memset(&m2, 0, sizeof m2);
    if (trove_bundle_manifest_decode(enc.ptr, enc.len, &m2, NULL) != TROVE_OK ||
        memcmp(&m, &m2, sizeof m) != 0)
        abort();
    trove_bytes_free(&enc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trove_bundle *b = (struct trove_bundle *)&b, *sentinel = b, *b2 = sentinel;
    struct trove_bytes out = {0};
    struct trove_diag diag;
    const char *folder;
    size_t flen;
    int rc, rc2;

    rc = trove_bundle_open_mem(data, size, &b, &diag);
    rc2 = trove_bundle_open_mem(data, size, &b2, NULL);
    if (rc != rc2)
        abort();
    if (rc2 == TROVE_OK)
        trove_bundle_close(b2);
    if (rc != TROVE_OK) {
        if (diag.code != rc || b != sentinel)
            abort();
        return 0;
    }
    if (trove_bundle_count(b) == 0 || trove_bundle_count(b) > TROVE_BUNDLE_MAX_ENTRIES)
        abort();
    folder = trove_bundle_folder(b);
    flen = strlen(folder);
    if (flen > 0 && (folder[flen - 1] != '/' || trove_bundle_find(b, TROVE_BUNDLE_MANIFEST_NAME,
                                                                  NULL) != TROVE_OK))
        abort();
    for (size_t i = 0; i < trove_bundle_count(b); i++) {
        const char *name = trove_bundle_name(b, i);
        size_t idx, before, len = name ? strlen(name) : 0;
        int is_dir = len > 1 && name[len - 1] == '/';
        if (!name || trove_bundle_name_check(name, len - (size_t)is_dir, NULL) != TROVE_OK)
            abort();
        if (is_dir) { /* listed, never found */
            if (trove_bundle_find(b, name, NULL) != TROVE_ERR_NOTFOUND)
                abort();
            continue;
        }
        if (strncmp(name, folder, flen) != 0) /* outside the bundle's folder */
            continue;
        name += flen;
        if (trove_bundle_find(b, name, &idx) != TROVE_OK || idx != i)
            abort();
        /* out holds one marker byte, which no read may disturb */
        out.len = 0;
        if (trove_bytes_append(&out, "M", 1) != TROVE_OK)
            abort();
        rc = trove_bundle_read(b, name, READ_CAP, &out, &diag);
        if (rc != TROVE_OK) {
            if (diag.code != rc || out.len != 1 || out.ptr[0] != 'M')
                abort();
            continue;
        }
        before = out.len - 1;
        if (before > READ_CAP || out.ptr[0] != 'M')
            abort();
        if (before > 0) {
            rc = trove_bundle_read(b, name, before - 1, &out, NULL);
            if (rc != TROVE_ERR_LIMIT || out.len != before + 1)
                abort();
        }
        if (strcmp(name, TROVE_BUNDLE_MANIFEST_NAME) == 0)
            check_manifest(out.ptr + 1, before);
    }
    if (trove_bundle_read(b, "", READ_CAP, &out, NULL) != TROVE_ERR_NOTFOUND)
        abort();
    trove_bundle_close(b);
    trove_bytes_free(&out);
    return 0;
}
