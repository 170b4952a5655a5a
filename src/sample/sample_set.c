/*
 * sample_set.c: what sampling gathered (trove/sample.h, struct trove_sample_set) — modules,
 * samples as (module, offset) frames, context switches, thread names.
 *
 * Samples are rows of (time, pid, tid, first frame, frame count) over one pool of frames,
 * so a sample costs 24 bytes plus 16 a frame and no allocation of its own. Modules are few
 * (a process maps tens to hundreds of files) and found by a linear scan from the most
 * recent: the sampler asks once per mapping, not per sample. Every add reserves before it
 * writes, so a failed add leaves the set as it was.
 */
#include "trove/sample.h"
#include "common/alloc.h"

#include <stdlib.h>
#include <string.h>

#define PATH_MAX_LEN 4095u

struct module_row {
    char *path;
    uint8_t build_id[TROVE_SAMPLE_BUILD_ID_MAX];
    size_t build_id_len;
};

struct sample_row {
    uint64_t time_ns;
    uint32_t pid, tid;
    size_t first;
    uint32_t n;
};

struct trove_sample_set {
    struct module_row *mod;
    size_t n_mod, cap_mod;
    struct sample_row *smp;
    size_t n_smp, cap_smp;
    struct trove_sample_frame *frm;
    size_t n_frm, cap_frm;
    struct trove_sample_switch *sw;
    size_t n_sw, cap_sw;
    struct trove_names *names;
};

/* Room for `more` rows past n in *arr (of *cap, each `size` bytes): the array, or NULL
 * (then *arr is as it was). */
static void *grow(void *arr, size_t *cap, size_t n, size_t more, size_t size)
{
    size_t c = *cap ? *cap : 64;
    void *q;
    if (n + more <= *cap)
        return arr;
    if (more > SIZE_MAX / 2 - n)
        return NULL;
    while (c < n + more)
        c *= 2;
    if (c > SIZE_MAX / size || !(q = trove__realloc(arr, c * size)))
        return NULL;
    *cap = c;
    return q;
}

int trove_sample_set_new(struct trove_sample_set **out)
{
    struct trove_sample_set *s;
    if (!out)
        return TROVE_ERR_INVALID;
    *out = NULL;
    if (!(s = trove__calloc(1, sizeof *s)))
        return TROVE_ERR_NOMEM;
    if (trove_names_new(&s->names) != TROVE_OK) {
        free(s);
        return TROVE_ERR_NOMEM;
    }
    *out = s;
    return TROVE_OK;
}

void trove_sample_set_free(struct trove_sample_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n_mod; i++)
        free(s->mod[i].path);
    free(s->mod);
    free(s->smp);
    free(s->frm);
    free(s->sw);
    trove_names_free(s->names);
    free(s);
}

int trove_sample_set_module(struct trove_sample_set *s, const char *path, const uint8_t *build_id,
                            size_t build_id_len, uint32_t *id_out)
{
    struct module_row *m;
    size_t plen;
    if (!s || !path || !id_out || (build_id_len && !build_id))
        return TROVE_ERR_INVALID;
    if (build_id_len > TROVE_SAMPLE_BUILD_ID_MAX)
        return TROVE_ERR_LIMIT;
    if ((plen = strlen(path)) > PATH_MAX_LEN)
        return TROVE_ERR_LIMIT;
    for (size_t i = s->n_mod; i-- > 0;)
        if (s->mod[i].build_id_len == build_id_len && !strcmp(s->mod[i].path, path) &&
            (!build_id_len || !memcmp(s->mod[i].build_id, build_id, build_id_len))) {
            *id_out = (uint32_t)i;
            return TROVE_OK;
        }
    if (s->n_mod >= TROVE_SAMPLE_NO_MODULE - 1)
        return TROVE_ERR_LIMIT;
    if (!(m = grow(s->mod, &s->cap_mod, s->n_mod, 1, sizeof *s->mod)))
        return TROVE_ERR_NOMEM;
    s->mod = m;
    m = &s->mod[s->n_mod];
    memset(m, 0, sizeof *m);
    if (!(m->path = trove__malloc(plen + 1)))
        return TROVE_ERR_NOMEM;
    memcpy(m->path, path, plen + 1);
    if (build_id_len)
        memcpy(m->build_id, build_id, build_id_len);
    m->build_id_len = build_id_len;
    *id_out = (uint32_t)s->n_mod++;
    return TROVE_OK;
}

size_t trove_sample_set_module_count(const struct trove_sample_set *s) { return s ? s->n_mod : 0; }

int trove_sample_set_module_get(const struct trove_sample_set *s, uint32_t id,
                                struct trove_sample_module *out)
{
    if (!s || !out || id >= s->n_mod)
        return TROVE_ERR_INVALID;
    out->path = s->mod[id].path;
    out->build_id = s->mod[id].build_id;
    out->build_id_len = s->mod[id].build_id_len;
    return TROVE_OK;
}

int trove_sample_set_add(struct trove_sample_set *s, uint64_t time_ns, uint32_t pid, uint32_t tid,
                         const struct trove_sample_frame *frames, size_t n)
{
    void *q;
    if (!s || (n && !frames))
        return TROVE_ERR_INVALID;
    if (n > TROVE_SAMPLE_MAX_FRAMES)
        return TROVE_ERR_LIMIT;
    for (size_t i = 0; i < n; i++)
        if (frames[i].module != TROVE_SAMPLE_NO_MODULE && frames[i].module >= s->n_mod)
            return TROVE_ERR_INVALID;
    if (!(q = grow(s->frm, &s->cap_frm, s->n_frm, n, sizeof *s->frm)))
        return TROVE_ERR_NOMEM;
    s->frm = q;
    if (!(q = grow(s->smp, &s->cap_smp, s->n_smp, 1, sizeof *s->smp)))
        return TROVE_ERR_NOMEM;
    s->smp = q;
    if (n)
        memcpy(s->frm + s->n_frm, frames, n * sizeof *frames);
    s->smp[s->n_smp++] = (struct sample_row){time_ns, pid, tid, s->n_frm, (uint32_t)n};
    s->n_frm += n;
    return TROVE_OK;
}

size_t trove_sample_set_count(const struct trove_sample_set *s) { return s ? s->n_smp : 0; }

void trove_sample_set_get(const struct trove_sample_set *s, size_t i, struct trove_sample *out)
{
    const struct sample_row *r = &s->smp[i];
    out->time_ns = r->time_ns;
    out->pid = r->pid;
    out->tid = r->tid;
    out->n_frames = r->n;
    out->frames = r->n ? s->frm + r->first : NULL;
}

int trove_sample_set_add_switch(struct trove_sample_set *s, const struct trove_sample_switch *sw)
{
    void *q;
    if (!s || !sw)
        return TROVE_ERR_INVALID;
    if (!(q = grow(s->sw, &s->cap_sw, s->n_sw, 1, sizeof *s->sw)))
        return TROVE_ERR_NOMEM;
    s->sw = q;
    s->sw[s->n_sw++] = *sw;
    return TROVE_OK;
}

const struct trove_sample_switch *trove_sample_set_switches(const struct trove_sample_set *s,
                                                            size_t *n_out)
{
    if (n_out)
        *n_out = s ? s->n_sw : 0;
    return s && s->n_sw ? s->sw : NULL;
}

struct trove_names *trove_sample_set_names(struct trove_sample_set *s) { return s ? s->names : NULL; }
