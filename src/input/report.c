/*
 * report.c: how the input layer's files say things — an error's message and code, the name
 * an input goes by in messages, progress through the caller's callback, warnings into the
 * caller's list — and the defaults every reader shares (the store, the Perfetto sniff).
 * Below every other file of the layer: it calls none of them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "input_internal.h"
#include "trove/trace.h"

const char *in_msg(const struct trove_diag *d, int rc)
{
    return d && d->msg[0] ? d->msg : trove_strerror(rc);
}

int in_code(const struct trove_diag *diag)
{
    return diag && diag->code < 0 ? diag->code : TROVE_ERR_INVALID;
}

const char *in_label(const struct trove_input_options *opt, const char *path)
{
    return opt && opt->label && *opt->label ? opt->label : path;
}

void in_progress(const struct trove_input_options *opt, const char *what, uint64_t done,
                 uint64_t total)
{
    if (opt && opt->progress)
        opt->progress(opt->ctx, what, done, total);
}

const char *trove_input_default_store(const char *given)
{
    const char *env;
    if (given)
        return given;
    return (env = getenv("TROVE_STORE")) && *env ? env : "./trove-data";
}

int trove_input_sniff_perfetto(const uint8_t *head, size_t n)
{
    return trove_perfetto_sniff(head, n);
}

void trove_warn(struct trove_warnings *w, uint64_t count, const char *fmt, ...)
{
    va_list ap;

    if (!w)
        return;
    if (w->n >= TROVE_WARNINGS_MAX) {
        w->more++;
        w->more_count += count;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(w->w[w->n].message, sizeof w->w[w->n].message, fmt, ap);
    va_end(ap);
    w->w[w->n].count = count;
    w->n++;
}
