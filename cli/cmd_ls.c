/*
 * cmd_ls.c: `trove ls`, the captures of a store (with --url, of a service: cmd_remote.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "trove/profile.h"
#include "trove/capture.h"
#include "trove/stream.h"

#define STORE_HELP                                                                               \
    "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data)\n"


/* ---- ls ---------------------------------------------------------------------------------- */

static const struct cli_store_usage ls_usage = {
    "usage: trove ls [--json] [--store DIR]\n"
    "       trove ls --url URL [--token-file FILE] [--json]\n"
    "\n"
    "List the captures of the store by name, one a line: events, segments and their\n"
    "format (model, deflate, columnar or columnar_deflate: `trove import\n"
    "--segment-format`; \"deflate+model\" when an append added a second) and samples\n"
    "(a capture of samples alone: its samples only), how long it is and where it starts\n"
    "on its clock (in seconds; --json gives the nanoseconds), the bytes stored and when\n"
    "it was last replayed. A capture whose header cannot be read, or a volume whose\n"
    "recipe cannot be read (it may be a capture), is listed with the reason; one naming\n"
    "objects on record as damaged is marked DAMAGED (importing it again heals it); ls\n"
    "then exits 1 after listing everything. Block volumes are left out (`trove volume\n"
    "ls` lists every volume). With --url, the captures of a running `trove serve` (GET\n"
    "/api/captures), a live one marked \"live\".\n"
    "  --json             one JSON array of objects {name, events, segments, names, flows,\n"
    "                     samples, switches, first_ns, end_ns, raw_bytes, stored_bytes,\n"
    "                     attr_rows, attrs_bytes,\n"
    "                     segment_format, damaged, last_used_ns (Unix ns, or null)},\n"
    "                     or {name, error, damaged} (docs/serve.md, \"A capture as JSON\");\n"
    "                     with --url, the service's array as it sent it: the same keys\n"
    "                     and live\n"
    STORE_HELP REMOTE_HELP,
    CLI_OPT_JSON | CLI_OPT_URL | CLI_OPT_TOKEN_FILE, 0, 0, 0};

/* trove_store_damaged's callback: one more damaged slot for the capture of that name. */
struct ls_damage {
    const struct trove_capture_entry *e;
    uint64_t *slots; /* per entry of e */
    size_t n;
};

static int ls_entry_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct trove_capture_entry *)elem)->name);
}

static int ls_note_damage(void *ctx, const struct trove_digest *d, const char *volume,
                          uint64_t slot)
{
    struct ls_damage *x = ctx;
    const struct trove_capture_entry *hit = bsearch(volume, x->e, x->n, sizeof *x->e, ls_entry_cmp);

    (void)d;
    (void)slot;
    if (hit) /* e is sorted by name; a block volume is not listed */
        x->slots[hit - x->e]++;
    return 0;
}

int cmd_ls(int argc, char **argv)
{
    struct cli_store_args a;
    struct trove_store *s = NULL;
    struct trove_capture_entry *e = NULL;
    struct trove_bytes jb = {0};
    struct ls_damage dmg = {0};
    size_t n = 0, width = 4, unreadable = 0, damaged = 0;
    int json, rc, status = 1;

    if ((rc = cli_store_args_parse("ls", argc, argv, &ls_usage, &a)) >= 0)
        return rc;
    json = (a.given & CLI_OPT_JSON) != 0;
    if (a.url || a.token_file) {
        struct cli_remote_args ra;
        if (!a.url)
            return cli_error("ls", "--token-file goes with --url URL");
        if (cli_exclusive("ls", a.store_given, "--store", 1, "--url"))
            return 2;
        memset(&ra, 0, sizeof ra);
        ra.url = a.url;
        ra.token_file = a.token_file;
        ra.json = json;
        ra.quiet = (a.given & CLI_OPT_QUIET) != 0;
        return cli_remote_ls(&ra);
    }
    if (cli_store_open("ls", a.store, TROVE_STORE_READONLY, &s))
        return 1;
    if ((rc = trove_capture_list(s, &e, &n)) != TROVE_OK) {
        cli_error("ls", "listing %s: %s", a.store, trove_strerror(rc));
        goto out;
    }
    /* The damage on record (the store's quarantine), by capture: nothing to walk when
     * there is none. */
    dmg.e = e;
    dmg.n = n;
    if (n > 0 && !(dmg.slots = calloc(n, sizeof *dmg.slots))) {
        cli_error("ls", "out of memory");
        goto out;
    }
    if (n > 0 && (rc = trove_store_damaged(s, ls_note_damage, &dmg)) != TROVE_OK) {
        cli_error("ls", "looking for damage on record in %s: %s", a.store, trove_strerror(rc));
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (strlen(e[i].name) > width)
            width = strlen(e[i].name);
    if (json)
        putchar('[');
    for (size_t i = 0; i < n; i++) {
        struct trove_diag diag = {0};
        const char *msg = "";
        struct trove_capture_listing l;
        memset(&l, 0, sizeof l);
        l.name = e[i].name;
        l.info = e[i].info;
        l.damaged = dmg.slots[i];
        damaged += l.damaged > 0;
        /* The marker is bookkeeping: a missing or damaged one reads as never used. */
        l.have_used = trove_capture_last_used(a.store, e[i].name, &l.last_used_ns) == TROVE_OK;
        if (e[i].error == TROVE_OK &&
            (rc = trove_capture_samples_span(s, e[i].name, &l.info, &diag)) != TROVE_OK)
            e[i].error = rc; /* its profile cannot be read: listed as unreadable */
        if (e[i].error != TROVE_OK) {
            /* The list has the code; asking again gives the message. */
            struct trove_capture_info info;
            if (!diag.msg[0])
                rc = trove_capture_info(s, e[i].name, &info, &diag);
            msg = cli_diag_msg(&diag, rc != TROVE_OK ? rc : e[i].error);
            unreadable++;
        }
        if (json) {
            if (i)
                putchar(',');
            if (e[i].error == TROVE_OK) {
                jb.len = 0;
                if (trove_capture_listing_json(&l, &jb) != TROVE_OK) {
                    cli_error("ls", "out of memory");
                    goto out;
                }
                printf("{%.*s}", (int)jb.len, (const char *)jb.ptr);
                continue;
            }
            fputs("{\"name\":", stdout);
            cli_json_string(stdout, e[i].name, strlen(e[i].name));
            fputs(",\"error\":", stdout);
            cli_json_string(stdout, msg, strlen(msg));
            printf(",\"damaged\":%llu}", (unsigned long long)l.damaged);
        } else if (e[i].error != TROVE_OK) {
            printf("%-*s unreadable: %s\n", (int)width, e[i].name, msg);
        } else {
            const struct trove_capture_info *c = &l.info;
            struct cli_capture_line cl = {e[i].name, c->events, c->segments, c->first_ns,
                                          c->end_ns, c->stored_bytes, l.last_used_ns, 1,
                                          l.have_used, 0,
                                          trove_capture_segment_format_name(c->flags),
                                          c->samples, l.damaged};
            cli_print_capture_line(stdout, (int)width, &cl);
        }
    }
    if (json)
        puts("]");
    if (fflush(stdout) != 0) {
        cli_error("ls", "writing stdout: %s", strerror(errno));
        goto out;
    }
    if (unreadable)
        cli_error("ls", "%s: %zu of %zu captures cannot be read (listed above; `trove verify "
                  "--store %s` says more)",
                  a.store, unreadable, n, a.store);
    if (damaged)
        cli_error("ls", "%s: %zu of %zu captures have damaged objects on record (marked "
                  "above); `trove verify --store %s` lists them, and importing each capture "
                  "again heals it",
                  a.store, damaged, n, a.store);
    if (unreadable || damaged)
        goto out;
    status = 0;
out:
    free(e);
    free(dmg.slots);
    trove_bytes_free(&jb);
    cli_store_close(s);
    return status;
}

