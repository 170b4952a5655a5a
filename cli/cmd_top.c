/*
 * cmd_top.c: `trove top CAPTURE`, the hottest functions of a stored profile (the table
 * `trove record --top` prints, cli_print_top in record_sample.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "trove/capture.h"
#include "trove/profile.h"
#include "trove/sample.h"
#include "trove/wire.h"

/* ---- trove top ------------------------------------------------------------------------ */

static void top_usage(FILE *f)
{
    fprintf(f,
            "usage: trove top NAME [--store DIR] [--from-ns A] [--to-ns B] [-n N] [--json]\n"
            "\n"
            "The hottest functions of capture NAME's sampled call stacks (`trove record NAME\n"
            "--store DIR -- CMD`, or a bundle with samples imported): for each function, its\n"
            "self samples (the function was running) and total samples (it was on the stack),\n"
            "over the samples whose time is in [A, B) nanoseconds (CLOCK_MONOTONIC, the clock of\n"
            "the capture's events).\n"
            "  --store DIR        the store (default $TROVE_STORE, else ./trove-data)\n"
            "  --from-ns A        samples at or after A (default: the first)\n"
            "  --to-ns B          samples before B (default: to the end)\n"
            "  -n, --top N        the N functions with the most self samples (default 20, 0: all)\n"
            "  --json             one JSON object: capture, from_ns, to_ns, samples, top\n");
}

int cmd_top(int argc, char **argv)
{
    const char *cmd = "top", *name = NULL, *store = NULL;
    struct trove_profile *p = NULL;
    struct trove_profile_func *f = NULL;
    uint64_t from = 0, to = UINT64_MAX, top = 20, in_range = 0;
    size_t n = 0;
    int json = 0, rc, status = 1;

    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (cli_is_help(s)) {
            top_usage(stdout);
            return 0;
        }
        if (!strcmp(s, "--store") && i + 1 < argc) {
            store = argv[++i];
        } else if (!strcmp(s, "--from-ns") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &from))
                return cli_error(cmd, "--from-ns: '%s' is not a time in nanoseconds", argv[i]);
        } else if (!strcmp(s, "--to-ns") && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &to))
                return cli_error(cmd, "--to-ns: '%s' is not a time in nanoseconds", argv[i]);
        } else if ((!strcmp(s, "-n") || !strcmp(s, "--top")) && i + 1 < argc) {
            if (cli_parse_u64(argv[++i], &top))
                return cli_error(cmd, "%s: '%s' is not a count", s, argv[i]);
        } else if (!strcmp(s, "--json")) {
            json = 1;
        } else if (s[0] == '-' && s[1]) {
            cli_error(cmd, "unknown option or missing value '%s'; see `trove top --help`", s);
            return 2;
        } else if (!name) {
            name = s;
        } else {
            return cli_error(cmd, "unexpected argument '%s'; see `trove top --help`", s);
        }
    }
    if (!name) {
        cli_error(cmd, "no capture NAME; see `trove top --help`");
        return 2;
    }
    if (from > to)
        return cli_error(cmd, "--from-ns %llu is after --to-ns %llu", (unsigned long long)from,
                         (unsigned long long)to);
    if (cli_capture_profile(cmd, store, name, 0, UINT64_MAX, &p))
        return 1;
    if (!p && trove_profile_new(&p) != TROVE_OK) {
        cli_error(cmd, "out of memory");
        goto out;
    }
    if ((rc = trove_profile_top(p, from, to, &f, &n, &in_range)) != TROVE_OK) {
        cli_error(cmd, "the top functions of %s: %s", name, trove_strerror(rc));
        goto out;
    }
    if (json) {
        printf("{\"capture\":");
        cli_json_string(stdout, name, strlen(name));
        printf(",\"from_ns\":%llu,\"to_ns\":%llu,\"samples\":%llu", (unsigned long long)from,
               (unsigned long long)to, (unsigned long long)in_range);
        cli_print_top(top, 1, p, f, n, in_range);
        printf("}\n");
    } else {
        cli_print_top(top, 0, p, f, n, in_range);
    }
    if (in_range == 0)
        fprintf(stderr, "trove top: capture %s has no samples%s (`trove record %s --store "
                        "DIR -- CMD` records some)\n",
                name, trove_profile_sample_count(p) ? " in that range" : "", name);
    if (fflush(stdout) != 0) {
        cli_error(cmd, "writing stdout: %s", strerror(errno));
        goto out;
    }
    status = 0;
out:
    free(f);
    trove_profile_free(p);
    return status;
}
