/*
 * cmd_store.c: the store-wide commands — `trove snapshot VOLUME NAME`, `trove verify` and
 * `trove gc` (include/trove/volume.h), and `trove store copy SRC DST`. The volume commands
 * are in cmd_volume.c.
 *
 * verify opens the store read-only unless it is asked to repair, so it can run beside
 * readers; gc needs the store to itself (a writable open waits for every reader). Both
 * report on stdout (text or one JSON object) and show progress on a terminal.
 */
#include <errno.h>
#include <string.h>

#include "cli.h"

#define STORE_HELP                                                                               \
    "  --store DIR   the store (default: $TROVE_STORE if set, else ./trove-data)\n"

static const struct cli_store_usage snapshot_usage = {
    "usage: trove snapshot VOLUME NAME [--json] [-q] [--store DIR]\n"
    "\n"
    "Snapshot the committed state of VOLUME as NAME: a read-only volume that shares every\n"
    "block with VOLUME, so it costs only its recipe. Later writes to VOLUME do not change\n"
    "it; `trove volume rm NAME` removes it. A line on stderr says what was made.\n"
    "  --json        print {source, snapshot} on stdout instead\n"
    "  -q, --quiet   no line on stderr\n" STORE_HELP,
    CLI_OPT_JSON | CLI_OPT_QUIET, 0, 2, 2};

static const struct cli_store_usage verify_usage = {
    "usage: trove verify [--deep] [--repair [--from STORE]] [--json] [--store DIR]\n"
    "\n"
    "Check every volume and snapshot of the store: each block's object is present with the\n"
    "right length and not on record as damaged. Without --deep the objects' contents are\n"
    "not read (the summary says so).\n"
    "A damaged object (found by --deep or by any read) is quarantined: never served again\n"
    "until its content is put again (`trove volume put`, `trove import` of what holds it),\n"
    "which heals it. Each damaged object is listed with the volumes and slots that name it.\n"
    "Exits 0 when the store is clean, 1 when a problem remains.\n"
    "  --deep        also read every object and check that it hashes to its name\n"
    "  --repair      look at every quarantined object again and release those that hash\n"
    "                to their name now (healed)\n"
    "  --from STORE  with --repair: another copy (a directory or s3://BUCKET[/PREFIX], as\n"
    "                `trove store copy` made it): every object the store lacks or has on\n"
    "                record as damaged (with --deep: found by this run's reads too) is read\n"
    "                from STORE, checked against its name, and put back, which heals it;\n"
    "                then the store is verified. The JSON adds repaired and unavailable\n"
    "                (objects STORE could not give whole either)\n"
    "  --json        one JSON object: volumes, bad_recipes, slots, objects, missing_objects,\n"
    "                bad_length, bad_hash, quarantined, healed, deep, ok, first_problem,\n"
    "                damaged ([{object, volume, slot}]), bad_packs ([{name, why}]: pack\n"
    "                files that cannot be read, whose objects are missing)\n"
    STORE_HELP,
    CLI_OPT_DEEP | CLI_OPT_REPAIR | CLI_OPT_JSON | CLI_OPT_FROM, 0, 0, 0};

static const struct cli_store_usage gc_usage = {
    "usage: trove gc [--json] [--store DIR]\n"
    "\n"
    "Delete every object that no volume or snapshot names (what `trove volume rm` and\n"
    "overwrites leave behind), and every pack file that cannot be read once no recipe needs\n"
    "it, and print how many and how many bytes. Refused while a recipe cannot be read.\n"
    "On S3 an unnamed object stored less than $TROVE_GC_GRACE_SEC (default 3600) seconds\n"
    "ago is kept, since another writer may be about to name it.\n"
    "  --json        one JSON object: objects_seen, objects_deleted, bytes_deleted,\n"
    "                bad_packs_deleted, objects_young (kept: within the grace period)\n"
    STORE_HELP,
    CLI_OPT_JSON, 0, 0, 0};

static void store_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct cli_progress *p = ctx;
    p->total = total;
    cli_progress_update(p, done);
}

int cmd_snapshot(int argc, char **argv)
{
    struct cli_store_args a;
    struct trove_store *s = NULL;
    struct trove_diag diag = {0};
    int rc, status = 1;

    if ((rc = cli_store_args_parse("snapshot", argc, argv, &snapshot_usage, &a)) >= 0)
        return rc;
    for (int i = 0; i < 2; i++)
        if ((rc = trove_volume_name_check(a.arg[i], &diag)) != TROVE_OK) /* names the rule */
            return cli_error("snapshot", "%s", cli_diag_msg(&diag, rc));
    if (cli_store_open("snapshot", a.store, 0, &s))
        goto out;
    rc = trove_snapshot_create(s, a.arg[0], a.arg[1], &diag);
    if (rc == TROVE_ERR_NOTFOUND) {
        cli_error("snapshot", "no volume named '%s' in %s; `trove volume ls --store %s` lists them",
                  a.arg[0], a.store, a.store);
        goto out;
    }
    if (rc == TROVE_ERR_EXISTS) {
        cli_error("snapshot", "%s already exists in %s; pick another name or `trove volume rm` it",
                  a.arg[1], a.store);
        goto out;
    }
    if (rc != TROVE_OK) {
        cli_error("snapshot", "snapshotting %s as %s: %s", a.arg[0], a.arg[1],
                  cli_diag_msg(&diag, rc));
        goto out;
    }
    if (a.given & CLI_OPT_JSON) {
        fputs("{\"source\":", stdout);
        cli_json_string(stdout, a.arg[0], strlen(a.arg[0]));
        fputs(",\"snapshot\":", stdout);
        cli_json_string(stdout, a.arg[1], strlen(a.arg[1]));
        puts("}");
        if (fflush(stdout) != 0) {
            cli_error("snapshot", "writing stdout: %s", strerror(errno));
            goto out;
        }
    } else if (!(a.given & CLI_OPT_QUIET)) {
        fprintf(stderr, "trove snapshot: %s -> %s (read-only, sharing every block)\n", a.arg[0],
                a.arg[1]);
    }
    status = 0;
out:
    cli_store_close(s);
    return status;
}

/* The slots that name a damaged object: a line each, or JSON array items. */
struct damaged_out {
    int json;
    uint64_t n;
};

static int print_damaged(void *ctx, const struct trove_digest *d, const char *volume,
                         uint64_t slot)
{
    struct damaged_out *o = ctx;
    char hex[33];

    trove_digest_hex(d, hex);
    if (o->json) {
        printf("%s{\"object\":\"%s\",\"volume\":", o->n ? "," : "", hex);
        cli_json_string(stdout, volume, strlen(volume));
        printf(",\"slot\":%llu}", (unsigned long long)slot);
    } else {
        printf("damaged: object %s, named by volume %s slot %llu (needs its content put "
               "again)\n", hex, volume, (unsigned long long)slot);
    }
    o->n++;
    return 0;
}

static int print_bad_pack(void *ctx, const char *name, const char *why)
{
    struct damaged_out *o = ctx;

    if (o->json) {
        printf("%s{\"name\":", o->n ? "," : "");
        cli_json_string(stdout, name, strlen(name));
        fputs(",\"why\":", stdout);
        cli_json_string(stdout, why, strlen(why));
        putchar('}');
    } else {
        printf("unreadable pack: %s: %s (its objects are missing; writing what names them "
               "again heals that, and `trove gc` then removes the pack)\n", name, why);
    }
    o->n++;
    return 0;
}

int cmd_verify(int argc, char **argv)
{
    struct cli_store_args a;
    struct trove_store *s = NULL, *from = NULL;
    struct trove_verify_report r;
    struct trove_repair_report fixed;
    struct damaged_out dmg = {0, 0};
    struct cli_progress prog;
    unsigned flags = 0;
    int rc, status = 1, ok;

    if ((rc = cli_store_args_parse("verify", argc, argv, &verify_usage, &a)) >= 0)
        return rc;
    if (a.given & CLI_OPT_DEEP)
        flags |= TROVE_VERIFY_DEEP;
    if (a.given & CLI_OPT_REPAIR)
        flags |= TROVE_VERIFY_REPAIR;
    if (a.from && !(flags & TROVE_VERIFY_REPAIR))
        return cli_error("verify", "--from STORE goes with --repair"), 2;
    if (cli_store_open("verify", a.store, flags & TROVE_VERIFY_REPAIR ? 0 : TROVE_STORE_READONLY, &s))
        return 1;
    memset(&fixed, 0, sizeof fixed);
    if (a.from) {
        struct trove_diag diag = {0};
        if (strcmp(a.from, a.store) == 0) {
            cli_error("verify", "--from %s is the store being repaired; give another copy",
                      a.from);
            goto out;
        }
        if (cli_store_open("verify", a.from, TROVE_STORE_READONLY, &from))
            goto out;
        /* A deep run reads everything first, so that damage no read had found is on
         * record, and so repaired too. */
        if ((flags & TROVE_VERIFY_DEEP) &&
            (rc = trove_store_verify(s, TROVE_VERIFY_DEEP, &r, NULL, NULL)) != TROVE_OK &&
            rc != TROVE_ERR_CORRUPT) {
            cli_error("verify", "checking %s stopped: %s", a.store, cli_store_why(s, rc));
            goto out;
        }
        if ((rc = trove_store_repair_from(s, from, &fixed, &diag)) != TROVE_OK) {
            cli_error("verify", "repairing %s from %s: %s", a.store, a.from,
                      cli_diag_msg(&diag, rc));
            goto out;
        }
    }
    memset(&r, 0, sizeof r);
    cli_progress_begin(&prog, "verifying", 0);
    rc = trove_store_verify(s, flags, &r, store_progress, &prog);
    cli_progress_end(&prog);
    if (rc != TROVE_OK && rc != TROVE_ERR_CORRUPT) {
        cli_error("verify", "checking %s stopped: %s", a.store, cli_store_why(s, rc));
        goto out;
    }
    ok = rc == TROVE_OK;
    dmg.json = (a.given & CLI_OPT_JSON) != 0;
    if (a.given & CLI_OPT_JSON) {
        printf("{\"volumes\":%llu,\"bad_recipes\":%llu,\"slots\":%llu,\"objects\":%llu,"
               "\"missing_objects\":%llu,\"bad_length\":%llu,\"bad_hash\":%llu,"
               "\"quarantined\":%llu,\"healed\":%llu,\"deep\":%s,\"ok\":%s,\"first_problem\":",
               (unsigned long long)r.volumes, (unsigned long long)r.bad_recipes,
               (unsigned long long)r.slots, (unsigned long long)r.objects,
               (unsigned long long)r.missing_objects, (unsigned long long)r.bad_length,
               (unsigned long long)r.bad_hash, (unsigned long long)r.quarantined,
               (unsigned long long)r.healed, r.deep ? "true" : "false", ok ? "true" : "false");
        cli_json_string(stdout, r.first_problem, strlen(r.first_problem));
        if (a.from)
            printf(",\"repaired\":%llu,\"unavailable\":%llu", (unsigned long long)fixed.repaired,
                   (unsigned long long)fixed.unavailable);
        fputs(",\"damaged\":[", stdout);
        if (r.bad_hash)
            trove_store_damaged(s, print_damaged, &dmg);
        fputs("],\"bad_packs\":[", stdout);
        dmg.n = 0;
        trove_backend_unreadable(trove_store_backend(s), 0, print_bad_pack, &dmg);
        puts("]}");
    } else {
        printf("%llu volumes, %llu slots, %llu objects checked%s: %llu missing, %llu wrong length, "
               "%llu bad hash, %llu unreadable recipes\n",
               (unsigned long long)r.volumes, (unsigned long long)r.slots,
               (unsigned long long)r.objects, flags & TROVE_VERIFY_DEEP ? " (deep)" : "",
               (unsigned long long)r.missing_objects, (unsigned long long)r.bad_length,
               (unsigned long long)r.bad_hash, (unsigned long long)r.bad_recipes);
        if (!r.deep)
            printf("contents not read: only presence, sizes and the damage on record were "
                   "checked (--deep reads and hashes every object)\n");
        if (a.from)
            printf("repaired from %s: %llu object%s (%llu bytes) put back; %llu it lacks too\n",
                   a.from, (unsigned long long)fixed.repaired, fixed.repaired == 1 ? "" : "s",
                   (unsigned long long)fixed.bytes, (unsigned long long)fixed.unavailable);
        if (r.healed)
            printf("healed: %llu quarantined object%s hash%s to %s name again and %s released\n",
                   (unsigned long long)r.healed, r.healed == 1 ? "" : "s",
                   r.healed == 1 ? "es" : "", r.healed == 1 ? "its" : "their",
                   r.healed == 1 ? "was" : "were");
        if (r.bad_hash)
            trove_store_damaged(s, print_damaged, &dmg);
        trove_backend_unreadable(trove_store_backend(s), 0, print_bad_pack, &dmg);
    }
    if (fflush(stdout) != 0) {
        cli_error("verify", "writing stdout: %s", strerror(errno));
        goto out;
    }
    if (!ok) {
        cli_error("verify", "%s is damaged: %s", a.store,
                  r.first_problem[0] ? r.first_problem : "see the counts above");
        goto out;
    }
    status = 0;
out:
    cli_store_close(from);
    cli_store_close(s);
    return status;
}

int cmd_gc(int argc, char **argv)
{
    struct cli_store_args a;
    struct trove_store *s = NULL;
    struct trove_gc_report r;
    struct cli_progress prog;
    int rc, status = 1;

    if ((rc = cli_store_args_parse("gc", argc, argv, &gc_usage, &a)) >= 0)
        return rc;
    if (cli_store_open("gc", a.store, 0, &s))
        return 1;
    memset(&r, 0, sizeof r);
    cli_progress_begin(&prog, "collecting", 0);
    rc = trove_store_gc(s, &r, store_progress, &prog);
    cli_progress_end(&prog);
    if (rc == TROVE_ERR_CORRUPT) {
        cli_error("gc", "%s has a recipe that cannot be read, so no object can be called "
                        "unused; `trove verify` says which",
                  a.store);
        goto out;
    }
    if (rc != TROVE_OK) {
        cli_error("gc", "collecting %s: %s (after deleting %llu objects)", a.store,
                  cli_store_why(s, rc), (unsigned long long)r.objects_deleted);
        goto out;
    }
    if (a.given & CLI_OPT_JSON)
        printf("{\"objects_seen\":%llu,\"objects_deleted\":%llu,\"bytes_deleted\":%llu,"
               "\"bad_packs_deleted\":%llu,\"objects_young\":%llu}\n",
               (unsigned long long)r.objects_seen, (unsigned long long)r.objects_deleted,
               (unsigned long long)r.bytes_deleted, (unsigned long long)r.bad_packs_deleted,
               (unsigned long long)r.objects_young);
    else
        printf("%llu objects seen, %llu deleted, %llu bytes freed%s%s\n",
               (unsigned long long)r.objects_seen, (unsigned long long)r.objects_deleted,
               (unsigned long long)r.bytes_deleted,
               r.bad_packs_deleted ? "; unreadable pack files removed" : "",
               r.objects_young ? "; unnamed objects younger than the grace period kept" : "");
    if (fflush(stdout) != 0) {
        cli_error("gc", "writing stdout: %s", strerror(errno));
        goto out;
    }
    status = 0;
out:
    cli_store_close(s);
    return status;
}

/* ---- trove store copy ------------------------------------------------------------------ */

static const struct cli_store_usage copy_usage = {
    "usage: trove store copy SRC DST [--replace] [--json] [-q]\n"
    "\n"
    "Copy every volume, snapshot and capture of the store SRC into the store DST, each a\n"
    "directory or s3://BUCKET[/PREFIX] (--s3-endpoint URL, AWS_* credentials; docs/s3.md).\n"
    "Only the objects DST lacks are read and written; then each volume's recipe is written\n"
    "as it is, so DST holds every volume as it was or as copied, never half of one. Run\n"
    "again after a failure, it copies what is still missing. A volume that DST holds with\n"
    "other content is refused before anything is copied, unless --replace. SRC is opened\n"
    "read-only; DST is made if missing. A progress line on a terminal; a summary on stdout.\n"
    "  --replace     replace DST's volumes that differ from SRC's\n"
    "A volume committed to in SRC during the copy is left out (exit 1: run it again).\n"
    "  --json        one JSON object: volumes, volumes_copied, volumes_same,\n"
    "                volumes_changed, objects, objects_present, objects_copied, bytes_copied\n"
    "  -q, --quiet   no progress line\n",
    CLI_OPT_JSON | CLI_OPT_REPLACE | CLI_OPT_QUIET, 0, 2, 2};

static int store_copy(int argc, char **argv)
{
    struct cli_store_args a;
    struct trove_store *src = NULL, *dst = NULL;
    struct trove_copy_report r;
    struct trove_diag diag = {0};
    struct cli_progress prog;
    int rc, status = 1;

    if ((rc = cli_store_args_parse("store copy", argc, argv, &copy_usage, &a)) >= 0)
        return rc;
    if (a.store_given) {
        cli_error("store copy", "name the stores as SRC and DST, not with --store");
        return 2;
    }
    if (!strcmp(a.arg[0], a.arg[1])) {
        cli_error("store copy", "SRC and DST are the same store (%s)", a.arg[0]);
        return 2;
    }
    if (a.given & CLI_OPT_QUIET)
        cli_progress_quiet();
    if (cli_store_open("store copy", a.arg[0], TROVE_STORE_READONLY, &src) ||
        cli_store_open("store copy", a.arg[1], TROVE_STORE_CREATE, &dst))
        goto out;
    cli_progress_begin(&prog, "copying", 0);
    rc = trove_store_copy(src, dst, (a.given & CLI_OPT_REPLACE) ? TROVE_COPY_REPLACE : 0, &r,
                          store_progress, &prog, &diag);
    cli_progress_end(&prog);
    if (rc != TROVE_OK) {
        /* For a refused or failed S3 request, what S3 said, from whichever store had it. */
        const char *s3 = rc == TROVE_ERR_REMOTE ? cli_store_why(dst, rc) : NULL;
        if (s3 == trove_strerror(rc))
            s3 = cli_store_why(src, rc);
        if (diag.msg[0] && s3)
            cli_error("store copy", "%s: %s", diag.msg, s3);
        else
            cli_error("store copy", "%s", diag.msg[0] ? diag.msg : s3 ? s3 : trove_strerror(rc));
        goto out;
    }
    if (a.given & CLI_OPT_JSON)
        printf("{\"volumes\":%llu,\"volumes_copied\":%llu,\"volumes_same\":%llu,"
               "\"volumes_changed\":%llu,\"objects\":%llu,\"objects_present\":%llu,"
               "\"objects_copied\":%llu,\"bytes_copied\":%llu}\n",
               (unsigned long long)r.volumes, (unsigned long long)r.volumes_copied,
               (unsigned long long)r.volumes_same, (unsigned long long)r.volumes_changed,
               (unsigned long long)r.objects,
               (unsigned long long)r.objects_present, (unsigned long long)r.objects_copied,
               (unsigned long long)r.bytes_copied);
    else
        printf("%llu volumes: %llu copied, %llu already there; %llu objects: %llu copied "
               "(%llu bytes), %llu already there\n",
               (unsigned long long)r.volumes, (unsigned long long)r.volumes_copied,
               (unsigned long long)r.volumes_same, (unsigned long long)r.objects,
               (unsigned long long)r.objects_copied, (unsigned long long)r.bytes_copied,
               (unsigned long long)r.objects_present);
    if (fflush(stdout) != 0) {
        cli_error("store copy", "writing stdout: %s", strerror(errno));
        goto out;
    }
    if (r.volumes_changed) {
        cli_error("store copy", "%llu volume(s) changed in %s during the copy and were not "
                                "copied; run the copy again",
                  (unsigned long long)r.volumes_changed, a.arg[0]);
        goto out;
    }
    status = 0;
out:
    cli_store_close(src);
    cli_store_close(dst);
    return status;
}

int cmd_store(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "copy"))
        return store_copy(argc - 1, argv + 1);
    if (argc >= 2 && cli_is_help(argv[1])) {
        fputs("usage: trove store copy SRC DST [--replace] [--json] [-q]\n"
              "\n"
              "Store-wide work across stores. `trove store copy --help` says more.\n"
              "(verify, gc and snapshot are `trove verify`, `trove gc`, `trove snapshot`.)\n",
              stdout);
        return 0;
    }
    fprintf(stderr, "usage: trove store copy SRC DST [--replace] [--json] [-q]\n");
    return 2;
}
