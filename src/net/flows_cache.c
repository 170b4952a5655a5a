/*
 * flows_cache.c: the flow rows of the captures the service answered last (flows_cache.h).
 */
#include "flows_cache.h"
#include "common/fail.h"

#include <stdlib.h>
#include <string.h>

#include "trove/capture.h"

void trove__flows_cache_init(struct trove__flows_cache *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
}

void trove__flows_cache_free(struct trove__flows_cache *c)
{
    for (int i = 0; i < TROVE__FLOWS_CACHE_ENTRIES; i++)
        trove_flows_free(&c->e[i].rows);
    pthread_mutex_destroy(&c->mu);
}

static int append(struct trove_flows *out, const struct trove_flows *rows)
{
    if (trove_flows_reserve(out, rows->len) != TROVE_OK)
        return TROVE_ERR_NOMEM;
    if (rows->len > 0)
        memcpy(out->f + out->len, rows->f, rows->len * sizeof *rows->f);
    out->len += rows->len;
    return TROVE_OK;
}

static size_t kept_rows(const struct trove__flows_cache *c)
{
    size_t n = 0;
    for (int i = 0; i < TROVE__FLOWS_CACHE_ENTRIES; i++)
        n += c->e[i].used ? c->e[i].rows.len : 0;
    return n;
}

int trove__flows_cached(struct trove__flows_cache *c, struct trove_store *s, const char *name,
                        struct trove_flows *out, struct trove_diag *diag)
{
    struct trove_digest key[2], after[2];
    struct trove_flows got = {0};
    int rc, victim = 0;

    if ((rc = trove_capture_flows_key(s, name, key, diag)) != TROVE_OK)
        return rc;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < TROVE__FLOWS_CACHE_ENTRIES; i++)
        if (c->e[i].used && !strcmp(c->e[i].name, name) &&
            !memcmp(c->e[i].key, key, sizeof key)) {
            c->e[i].used = ++c->tick;
            c->hits++;
            rc = append(out, &c->e[i].rows);
            pthread_mutex_unlock(&c->mu);
            return rc == TROVE_OK ? rc : TROVE_FAIL(diag, rc, 0, "out of memory");
        }
    c->misses++;
    pthread_mutex_unlock(&c->mu);

    if ((rc = trove_capture_read_flows(s, name, 0, UINT64_MAX, &got, diag)) != TROVE_OK)
        goto out;
    if ((rc = append(out, &got)) != TROVE_OK) {
        rc = TROVE_FAIL(diag, rc, 0, "out of memory");
        goto out;
    }
    /* kept only if the capture did not change while it was read */
    if (trove_capture_flows_key(s, name, after, NULL) != TROVE_OK ||
        memcmp(after, key, sizeof key) != 0 || strlen(name) > TROVE_VOLUME_NAME_MAX)
        goto out;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < TROVE__FLOWS_CACHE_ENTRIES; i++) {
        if (c->e[i].used && !strcmp(c->e[i].name, name)) { /* the capture's older rows */
            victim = i;
            break;
        }
        if (c->e[i].used < c->e[victim].used)
            victim = i;
    }
    trove_flows_free(&c->e[victim].rows);
    c->e[victim].used = 0;
    if (got.len + kept_rows(c) <= TROVE__FLOWS_CACHE_ROWS) {
        memcpy(c->e[victim].name, name, strlen(name) + 1);
        memcpy(c->e[victim].key, key, sizeof key);
        c->e[victim].rows = got;
        c->e[victim].used = ++c->tick;
        memset(&got, 0, sizeof got);
    }
    pthread_mutex_unlock(&c->mu);
out:
    trove_flows_free(&got);
    return rc;
}
