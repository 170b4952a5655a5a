/*
 * cmd_volume.c: `trove volume <subcommand>` — the volumes of a deduplicating store
 * (include/trove/volume.h) from the command line: create, put a whole file, write and read
 * byte ranges, cat, ls, info, resize, rm.
 *
 * The dispatcher opens what a subcommand needs, in an order that leaves nothing behind when
 * an argument is wrong: the volume name is checked, then the input file opened, then the
 * store (created only by create and put; read-only, a shared lock, for the commands that
 * only read), then the volume; and it closes them all after the subcommand.
 *
 * Data moves a block at a time, cut at the volume's block boundaries: a range that starts
 * or ends inside a block costs one read-modify-write at that end and every block between
 * is replaced whole, and memory stays one block whatever the size of the file or volume.
 * Every command that changes a volume ends with trove_volume_commit, so a command that
 * fails leaves the volume at its last committed state (objects it stored stay until
 * `trove gc`).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "trove/stream.h"

/* What the dispatcher opened for a subcommand (NULL, or unset, where it needs none). */
struct volume_run {
    const char *cmd;               /* "volume <subcommand>", for messages */
    const struct cli_store_args *a;
    const char *name;              /* arg[0], a valid volume name */
    struct trove_store *s;
    struct trove_volume *v;        /* the volume `name`, open at its committed state */
    struct trove_volume_info info; /* v's */
    FILE *in;                      /* arg[1], the input ("-": stdin) */
    const char *in_name;           /* its name for messages */
    int64_t in_size;               /* its size if a regular file, else -1 */
};

/* A volume subcommand: its name, what it does, what it needs opened, its command line. */
struct volume_command {
    const char *name;
    int (*fn)(struct volume_run *r);
    const char *summary;
    unsigned store_flags; /* TROVE_STORE_* the store is opened with */
    int open_volume;      /* open arg[0] as r->v (else it is only checked as a name) */
    int input;            /* arg[1] is a FILE to read */
    struct cli_store_usage usage;
};

#define STORE_HELP                                                                               \
    "  --store DIR        the store (default: $TROVE_STORE if set, else ./trove-data)\n"
#define SIZE_HELP "Sizes and offsets are bytes, or take a suffix K, M, G, T, P (KiB..PiB: powers of 1024).\n"

static int no_volume(const struct volume_run *r)
{
    return cli_error(r->cmd, "no volume or snapshot named '%s' in %s; `trove volume ls --store %s` "
                             "lists them",
                     r->name, r->a->store, r->a->store);
}

/* What an error from an operation on r's volume was: the message naming the recipe object
 * at fault when a part of the recipe it loaded was damaged, else the code's. */
static const char *vol_err(const struct volume_run *r, int rc)
{
    const char *m = r->v ? trove_volume_last_error(r->v) : "";
    return m[0] && (rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_CORRUPT) ? m : trove_strerror(rc);
}

/* What to do about an error from trove_volume_read/write/resize/commit on a volume. */
static const char *data_hint(int rc)
{
    switch (rc) {
    case TROVE_ERR_NOTFOUND:
    case TROVE_ERR_CORRUPT:
    case TROVE_ERR_TRUNCATED:
        return " (the store is damaged; `trove verify` says where)";
    case TROVE_ERR_READONLY:
        return " (a snapshot cannot be changed)";
    case -ENOSPC:
        return " (free some space: `trove gc` deletes unreferenced objects)";
    default:
        return "";
    }
}

/* Refuse to spray volume bytes over a terminal. 0, or 1 after printing why. */
static int check_stdout(const char *cmd)
{
    if (isatty(STDOUT_FILENO))
        return cli_error(cmd, "refusing to write volume bytes to a terminal; redirect stdout");
    return 0;
}

/* Refuse byte reads and writes of an object volume (a capture). 0, or 1 after printing why. */
static int check_blocks(const struct volume_run *r)
{
    if (r->info.objects)
        return cli_error(r->cmd, "%s holds whole objects (a capture), not bytes; `trove replay "
                                 "%s` streams a capture",
                         r->name, r->name);
    return 0;
}

/* Refuse to change a snapshot or a capture's bytes. 0, or 1 after printing why. */
static int check_writable(const struct volume_run *r)
{
    if (check_blocks(r))
        return 1;
    if (r->info.readonly)
        return cli_error(r->cmd, "%s is a snapshot, which cannot be changed; `trove volume ls` "
                                 "shows which names are volumes",
                         r->name);
    return 0;
}

/*
 * Reading goes through the streaming pipeline (trove/stream.h): the slots' objects are
 * downloaded ahead within the default depth and byte budget, and a sender thread writes
 * one block to stdout while the walker takes the next. A batch is the wanted part of one
 * slot, aliasing the object buffer (or a static block of zeros for an empty slot).
 */
struct copy_job {
    struct volume_run *r;
    uint64_t offset, len;   /* the byte range */
    uint64_t first_slot;
    struct cli_progress prog;
    uint64_t done;          /* bytes of finished slots, for the progress bar */
    int write_errno;        /* stdout's error, for the message */
};

static const uint8_t zero_block[1u << 16];

static int copy_decode(void *ctx, const struct trove_stream_object *obj,
                       struct trove_stream_emitter *em, struct trove_diag *diag)
{
    struct copy_job *j = ctx;
    uint32_t bs = j->r->info.block_size;
    uint64_t start = obj->slot * bs, size = j->r->info.size;
    size_t slen = (size_t)(size - start < bs ? size - start : bs);
    uint64_t lo = j->offset > start ? j->offset - start : 0;
    uint64_t hi = j->offset + j->len - start < slen ? j->offset + j->len - start : slen;
    struct trove_stream_batch b = {0};
    char hex[33];
    int rc;

    if (obj->data && obj->len != slen) {
        trove_digest_hex(obj->digest, hex);
        return trove_diag_set(diag, TROVE_ERR_CORRUPT, 0,
                              "block %llu (object %s) is %zu bytes, not %zu",
                              (unsigned long long)obj->slot, hex, obj->len, slen);
    }
    if (obj->data) {
        b.data = obj->data + lo;
        b.len = (size_t)(hi - lo);
        return trove_stream_emit(em, &b);
    }
    for (uint64_t at = lo; at < hi; at += b.len) { /* an empty slot reads as zeros */
        b.data = zero_block;
        b.len = (size_t)(hi - at < sizeof zero_block ? hi - at : sizeof zero_block);
        if ((rc = trove_stream_emit(em, &b)) != TROVE_OK)
            return rc;
    }
    return TROVE_OK;
}

static int copy_send(void *ctx, const struct trove_stream_batch *b)
{
    struct copy_job *j = ctx;

    if (fwrite(b->data, 1, b->len, stdout) != b->len) {
        j->write_errno = errno;
        return -EIO;
    }
    return TROVE_OK;
}

static void copy_item_done(void *ctx, uint64_t item)
{
    struct copy_job *j = ctx;
    uint32_t bs = j->r->info.block_size;
    uint64_t end = (j->first_slot + item + 1) * bs;

    j->done = (end < j->offset + j->len ? end : j->offset + j->len) - j->offset;
    cli_progress_update(&j->prog, j->done);
}

/* Copy len bytes of r->v from offset to stdout. 0, or 1 (reported). */
static int copy_out(struct volume_run *r, uint64_t offset, uint64_t len, int progress)
{
    struct copy_job j;
    struct trove_stream_options opt;
    struct trove_stream *st = NULL;
    struct trove_stream_stats stats;
    struct trove_diag diag = {0};
    struct trove_digest *d = NULL;
    uint32_t bs = r->info.block_size;
    uint64_t n = len ? (offset + len - 1) / bs - offset / bs + 1 : 0;
    struct trove_stream_decoder dec = {copy_decode, &j};
    struct trove_stream_sink sink = {copy_send, copy_item_done, &j};
    int rc, status = 1;

    memset(&j, 0, sizeof j);
    j.r = r;
    j.offset = offset;
    j.len = len;
    j.first_slot = offset / bs;
    cli_progress_begin(&j.prog, "reading", len);
    j.prog.active = j.prog.active && progress;
    if (n > SIZE_MAX / sizeof *d || (n > 0 && !(d = malloc((size_t)n * sizeof *d)))) {
        cli_error(r->cmd, "out of memory for the digests of %llu blocks", (unsigned long long)n);
        goto out;
    }
    trove_stream_options_default(&opt);
    opt.max_object = bs;
    if ((rc = trove_volume_slot_digests(r->v, j.first_slot, n, d)) != TROVE_OK ||
        (rc = trove_stream_new(trove_store_backend(r->s), &opt, &st)) != TROVE_OK) {
        cli_error(r->cmd, "%s: %s", r->name, vol_err(r, rc));
        goto out;
    }
    rc = trove_stream_run(st, d, j.first_slot, n, &dec, &sink, &stats, &diag);
    if (rc == TROVE_ERR_SEND) {
        cli_error(r->cmd, "writing stdout: %s", strerror(j.write_errno ? j.write_errno : EIO));
        goto out;
    }
    if (rc != TROVE_OK) {
        cli_error(r->cmd, "%s: %s%s", r->name, cli_diag_msg(&diag, rc), data_hint(rc));
        goto out;
    }
    if (fflush(stdout) != 0) {
        cli_error(r->cmd, "writing stdout: %s", strerror(errno));
        goto out;
    }
    status = 0;
out:
    cli_progress_end(&j.prog);
    trove_stream_free(st);
    free(d);
    return status;
}

/*
 * Write r->in into r->v from offset on, in chunks that end on block boundaries, up to a
 * regular file's size (as it was opened) or a pipe's end. Bytes past the volume's end grow
 * it when grow is set (put), else they are an error (write; a regular file was checked
 * before). *end_out is the offset after the last byte. 0, or 1 (reported).
 */
static int copy_in(struct volume_run *r, uint64_t offset, int grow, uint64_t *end_out)
{
    struct cli_progress prog;
    uint32_t bs = r->info.block_size;
    uint8_t *buf = malloc(bs);
    uint64_t pos = offset, end = r->in_size >= 0 ? offset + (uint64_t)r->in_size : UINT64_MAX;
    int rc, status = 1;
    /* a regular file, read from its start (as it was opened) */
    int by_fd = r->in_size >= 0 && ftell(r->in) == 0;

    cli_progress_begin(&prog, "writing", r->in_size >= 0 ? (uint64_t)r->in_size : 0);
    prog.active = prog.active && grow;
    if (!buf) {
        cli_error(r->cmd, "out of memory for a block of %u bytes", (unsigned)bs);
        goto out;
    }
    for (;;) {
        size_t want = (size_t)(bs - pos % bs), n;
        if (want > end - pos)
            want = (size_t)(end - pos);
        /* A regular file is not read here: trove_volume_write_fd reads each block once
         * and has the kernel copy a new one into its object. */
        if (want == 0 || (n = by_fd ? want : fread(buf, 1, want, r->in)) == 0)
            break;
        if (n > r->info.size - pos && !grow) {
            cli_error(r->cmd, "%s runs past the end of %s (%llu bytes); grow it first with "
                              "`trove volume resize %s --size SIZE`",
                      r->in_name, r->name, (unsigned long long)r->info.size, r->name);
            goto out;
        }
        if (n > r->info.size - pos) {
            if ((rc = trove_volume_resize(r->v, pos + n)) != TROVE_OK) {
                cli_error(r->cmd, "%s: growing to %llu bytes: %s%s", r->name,
                          (unsigned long long)(pos + n), vol_err(r, rc), data_hint(rc));
                goto out;
            }
            r->info.size = pos + n;
        }
        rc = by_fd ? trove_volume_write_fd(r->v, pos, fileno(r->in), pos - offset, n)
                   : trove_volume_write(r->v, pos, buf, n);
        if (rc == TROVE_ERR_TRUNCATED && by_fd) {
            cli_error(r->cmd, "%s shrank from %lld bytes while it was read; run the command "
                              "again",
                      r->in_name, (long long)r->in_size);
            goto out;
        }
        if (rc != TROVE_OK) {
            cli_error(r->cmd, "%s: writing %zu bytes at offset %llu: %s%s", r->name, n,
                      (unsigned long long)pos, vol_err(r, rc), data_hint(rc));
            goto out;
        }
        pos += n;
        cli_progress_update(&prog, pos - offset);
    }
    if (ferror(r->in)) {
        cli_error(r->cmd, "reading %s: %s", r->in_name, strerror(errno));
        goto out;
    }
    if (r->in_size >= 0 && pos != end) {
        cli_error(r->cmd, "%s shrank from %lld to %llu bytes while it was read; run the command "
                          "again",
                  r->in_name, (long long)r->in_size, (unsigned long long)(pos - offset));
        goto out;
    }
    *end_out = pos;
    status = 0;
out:
    cli_progress_end(&prog);
    free(buf);
    return status;
}

static int commit(struct volume_run *r)
{
    int rc = trove_volume_commit(r->v);
    if (rc != TROVE_OK)
        return cli_error(r->cmd, "%s: committing: %s%s", r->name, vol_err(r, rc),
                         data_hint(rc));
    return 0;
}

static int volume_create(struct volume_run *r)
{
    struct trove_diag diag = {0};
    int rc = trove_volume_create_format(r->s, r->name, r->a->size, (uint32_t)r->a->block_size,
                                        r->a->recipe_format, NULL, &diag);
    if (rc == TROVE_ERR_EXISTS)
        return cli_error(r->cmd, "%s already exists in %s; `trove volume resize` changes its "
                                 "size, `trove volume rm` removes it",
                         r->name, r->a->store);
    if (rc != TROVE_OK)
        return cli_error(r->cmd, "creating %s: %s", r->name, cli_diag_msg(&diag, rc));
    return 0;
}

static int volume_write(struct volume_run *r)
{
    uint64_t off = r->a->offset, end;

    if (check_writable(r))
        return 1;
    if (off > r->info.size)
        return cli_error(r->cmd, "offset %llu is past the end of %s (%llu bytes); grow it first "
                                 "with `trove volume resize %s --size SIZE`",
                         (unsigned long long)off, r->name, (unsigned long long)r->info.size,
                         r->name);
    /* A file's size is known: refuse before writing anything. A pipe's is checked as it comes. */
    end = r->in_size >= 0 ? off + (uint64_t)r->in_size : off;
    if (end < off || end > r->info.size)
        return cli_error(r->cmd, "%s: its %lld bytes at offset %llu run past the end of %s (%llu "
                                 "bytes); grow it first with `trove volume resize %s --size %llu`",
                         r->in_name, (long long)r->in_size, (unsigned long long)off, r->name,
                         (unsigned long long)r->info.size, r->name, (unsigned long long)end);
    return copy_in(r, off, 0, &end) || commit(r);
}

static int volume_read(struct volume_run *r)
{
    uint64_t off = r->a->offset, size = r->info.size;
    uint64_t len = r->a->given & CLI_OPT_LENGTH ? r->a->length : off <= size ? size - off : 0;

    if (off > size || len > size - off)
        return cli_error(r->cmd, "%llu bytes at offset %llu run past the end of %s (%llu bytes)",
                         (unsigned long long)len, (unsigned long long)off, r->name,
                         (unsigned long long)size);
    return check_blocks(r) || check_stdout(r->cmd) || copy_out(r, off, len, 0);
}

static int volume_cat(struct volume_run *r)
{
    return check_blocks(r) || check_stdout(r->cmd) || copy_out(r, 0, r->info.size, 1);
}

/* An error opening a volume that says its recipe is damaged (not absent, busy, refused,
 * out of memory or an I/O error, and not a newer format). */
static int is_damage(int rc)
{
    return rc == TROVE_ERR_CHECKSUM || rc == TROVE_ERR_CORRUPT || rc == TROVE_ERR_TRUNCATED ||
           rc == TROVE_ERR_MAGIC || rc == TROVE_ERR_LIMIT;
}

/*
 * Put: make volume NAME hold exactly FILE's bytes. The volume is created (or resized) to
 * the file's size and written whole, block by block; blocks that did not change hash to
 * their slot's digest and cost no store. A pipe has no size to start from: the volume then
 * grows as the bytes come and is cut to their count at the end. A volume put created is
 * removed again if the put fails.
 */
static int volume_put(struct volume_run *r)
{
    struct trove_diag diag = {0};
    uint64_t size = r->in_size >= 0 ? (uint64_t)r->in_size : 0, end;
    int rc, created = 0, status = 1, have_info = 0;

    rc = trove_volume_open(r->s, r->name, &r->v, &diag);
    /* The open reads the manifest; info loads the rest of the recipe, which is where a
     * damaged object shows: then the volume is written anew, as for a damaged manifest. */
    if (rc == TROVE_OK && (rc = trove_volume_info(r->v, &r->info)) != TROVE_OK) {
        snprintf(diag.msg, sizeof diag.msg, "%s", vol_err(r, rc));
        trove_volume_close(r->v);
        r->v = NULL;
    } else if (rc == TROVE_OK) {
        have_info = 1;
    }
    if (rc == TROVE_ERR_NOTFOUND) {
        memset(&diag, 0, sizeof diag);
        rc = trove_volume_create_format(r->s, r->name, size, (uint32_t)r->a->block_size,
                                        r->a->recipe_format, &r->v, &diag);
        created = rc == TROVE_OK;
    } else if (is_damage(rc)) {
        /* The recipe is damaged: the file's bytes make the volume again, and the commit
         * replaces the recipe (healing its objects as it stages them). */
        char why[sizeof diag.msg];
        snprintf(why, sizeof why, "%s", diag.msg);
        memset(&diag, 0, sizeof diag);
        rc = trove_volume_create_over(r->s, r->name, size,
                                      (r->a->given & CLI_OPT_BLOCK_SIZE)
                                          ? (uint32_t)r->a->block_size : 0,
                                      r->a->recipe_format, 0, &r->v, &diag);
        if (rc == TROVE_OK)
            fprintf(stderr, "trove %s: %s was damaged (%s); writing it anew from %s\n", r->cmd,
                    r->name, why, r->in_name);
    }
    if (rc != TROVE_OK) {
        cli_error(r->cmd, "%s: %s", r->name, cli_diag_msg(&diag, rc));
        goto out;
    }
    if (!have_info && (rc = trove_volume_info(r->v, &r->info)) != TROVE_OK) {
        cli_error(r->cmd, "%s: %s", r->name, vol_err(r, rc));
        goto out;
    }
    if (check_writable(r))
        goto out;
    if ((r->a->given & CLI_OPT_BLOCK_SIZE) && r->a->block_size != r->info.block_size) {
        cli_error(r->cmd, "%s exists with blocks of %u bytes, not %llu; drop --block-size, or "
                          "`trove volume rm` it first",
                  r->name, (unsigned)r->info.block_size, (unsigned long long)r->a->block_size);
        goto out;
    }
    if (r->a->recipe_format && (rc = trove_volume_set_format(r->v, r->a->recipe_format))) {
        cli_error(r->cmd, "%s: %s", r->name, vol_err(r, rc));
        goto out;
    }
    if (r->in_size >= 0 && r->info.size != size) {
        if ((rc = trove_volume_resize(r->v, size)) != TROVE_OK) {
            cli_error(r->cmd, "%s: resizing to %llu bytes: %s%s", r->name,
                      (unsigned long long)size, vol_err(r, rc), data_hint(rc));
            goto out;
        }
        r->info.size = size;
    }
    if (copy_in(r, 0, 1, &end))
        goto out;
    if (end != r->info.size && (rc = trove_volume_resize(r->v, end)) != TROVE_OK) {
        cli_error(r->cmd, "%s: cutting to %llu bytes: %s%s", r->name, (unsigned long long)end,
                  vol_err(r, rc), data_hint(rc));
        goto out;
    }
    if (commit(r))
        goto out;
    if ((rc = trove_volume_info(r->v, &r->info)) != TROVE_OK) {
        cli_error(r->cmd, "%s: %s", r->name, vol_err(r, rc));
        goto out;
    }
    if (r->a->given & CLI_OPT_JSON) {
        fputs("{\"volume\":", stdout);
        cli_json_string(stdout, r->name, strlen(r->name));
        fputs(",\"input\":", stdout);
        cli_json_string(stdout, r->in_name, strlen(r->in_name));
        printf(",\"bytes\":%llu,\"block_size\":%u,\"slots\":%llu,\"used_slots\":%llu,"
               "\"unique_objects\":%llu,\"stored_bytes\":%llu,\"generation\":%llu}\n",
               (unsigned long long)r->info.size, (unsigned)r->info.block_size,
               (unsigned long long)r->info.slots, (unsigned long long)r->info.used_slots,
               (unsigned long long)r->info.unique_objects,
               (unsigned long long)r->info.stored_bytes, (unsigned long long)r->info.generation);
        if (fflush(stdout) != 0) {
            cli_error(r->cmd, "writing stdout: %s", strerror(errno));
            goto out;
        }
    } else if (!(r->a->given & CLI_OPT_QUIET)) {
        fprintf(stderr, "trove %s: %s -> %s: %llu bytes, %llu of %llu slots used, %llu distinct "
                        "blocks (%llu bytes)\n",
                r->cmd, r->in_name, r->name, (unsigned long long)r->info.size,
                (unsigned long long)r->info.used_slots, (unsigned long long)r->info.slots,
                (unsigned long long)r->info.unique_objects,
                (unsigned long long)r->info.stored_bytes);
    }
    status = 0;
out:
    if (status && created) { /* it holds nothing the user asked for */
        trove_volume_close(r->v);
        r->v = NULL;
        trove_volume_remove(r->s, r->name, NULL);
    }
    return status;
}

/* "1.5 MiB" for a size in bytes. */
static const char *human_size(uint64_t n, char buf[32])
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double x = (double)n;
    int u = 0;
    while (x >= 1024 && u < 6) {
        x /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, 32, "%llu bytes", (unsigned long long)n);
    else
        snprintf(buf, 32, x == (double)(uint64_t)x ? "%.0f %s" : "%.1f %s", x, units[u]);
    return buf;
}

static int volume_ls(struct volume_run *r)
{
    struct trove_volume_entry *e = NULL;
    size_t n = 0, width = 1;
    int json = (r->a->given & CLI_OPT_JSON) != 0, rc, status = 1;

    if ((rc = trove_volume_list(r->s, &e, &n)) != TROVE_OK) {
        cli_error(r->cmd, "listing %s: %s", r->a->store, vol_err(r, rc));
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
        if (e[i].error != TROVE_OK) {
            /* The list has the code; opening the volume again gives the message with its file. */
            struct trove_volume *v = NULL;
            rc = trove_volume_open(r->s, e[i].name, &v, &diag);
            trove_volume_close(v);
            msg = cli_diag_msg(&diag, rc != TROVE_OK ? rc : e[i].error);
        }
        if (json) {
            fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
            cli_json_string(stdout, e[i].name, strlen(e[i].name));
            if (e[i].error != TROVE_OK) {
                fputs(",\"error\":", stdout);
                cli_json_string(stdout, msg, strlen(msg));
                putchar('}');
                continue;
            }
            printf(",\"kind\":\"%s\",\"objects\":%s,\"size\":%llu,\"block_size\":%u,"
                   "\"slots\":%llu,\"generation\":%llu,\"recipe_bytes\":%llu}",
                   e[i].readonly ? "snapshot" : "volume", e[i].objects ? "true" : "false",
                   (unsigned long long)e[i].size, (unsigned)e[i].block_size,
                   (unsigned long long)e[i].slots, (unsigned long long)e[i].generation,
                   (unsigned long long)e[i].recipe_bytes);
        } else if (e[i].error != TROVE_OK) {
            printf("%-*s unreadable: %s\n", (int)width, e[i].name, msg);
        } else {
            printf("%-*s %-8s size %llu  block %u  slots %llu  generation %llu%s\n", (int)width,
                   e[i].name, e[i].readonly ? "snapshot" : "volume", (unsigned long long)e[i].size,
                   (unsigned)e[i].block_size, (unsigned long long)e[i].slots,
                   (unsigned long long)e[i].generation,
                   e[i].objects ? "  objects (a capture: `trove ls`)" : "");
        }
    }
    if (json)
        puts("]");
    if (fflush(stdout) != 0) {
        cli_error(r->cmd, "writing stdout: %s", strerror(errno));
        goto out;
    }
    status = 0;
out:
    free(e);
    return status;
}

static int volume_rm(struct volume_run *r)
{
    struct trove_diag diag = {0};
    int rc = trove_volume_remove(r->s, r->name, &diag);
    if (rc == TROVE_ERR_NOTFOUND)
        return no_volume(r);
    if (rc != TROVE_OK)
        return cli_error(r->cmd, "removing %s: %s", r->name, cli_diag_msg(&diag, rc));
    return 0;
}

static int volume_resize(struct volume_run *r)
{
    int rc;

    if (check_writable(r))
        return 1;
    if ((rc = trove_volume_resize(r->v, r->a->size)) != TROVE_OK)
        return cli_error(r->cmd, "%s: resizing from %llu to %llu bytes: %s%s", r->name,
                         (unsigned long long)r->info.size, (unsigned long long)r->a->size,
                         trove_strerror(rc),
                         rc == TROVE_ERR_INVALID ? " (more slots than a recipe holds; a larger "
                                                   "block size holds more)"
                                                 : data_hint(rc));
    return commit(r);
}

static int volume_compact(struct volume_run *r)
{
    int rc;

    if (check_writable(r))
        return 1;
    if ((rc = trove_volume_compact(r->v)) != TROVE_OK)
        return cli_error(r->cmd, "%s: %s", r->name, vol_err(r, rc));
    if (r->a->recipe_format && (rc = trove_volume_set_format(r->v, r->a->recipe_format)))
        return cli_error(r->cmd, "%s: %s", r->name, vol_err(r, rc));
    fprintf(stderr,
            "trove %s: %s renumbered; snapshots taken before no longer share its recipe "
            "objects (their blocks are still shared)\n",
            r->cmd, r->name);
    return commit(r);
}

static int volume_info(struct volume_run *r)
{
    const struct trove_volume_info *in = &r->info;
    char h1[32], h2[32], h3[32];

    if (r->a->given & CLI_OPT_JSON)
        printf("{\"slots\":%llu,\"used_slots\":%llu,\"unique_objects\":%llu,\"logical_bytes\":%llu,"
               "\"stored_bytes\":%llu,\"recipe_bytes\":%llu,\"recipe_format\":\"v%d\","
               "\"resident_recipe_bytes\":%llu}\n",
               (unsigned long long)in->slots, (unsigned long long)in->used_slots,
               (unsigned long long)in->unique_objects, (unsigned long long)in->size,
               (unsigned long long)in->stored_bytes, (unsigned long long)in->recipe_bytes,
               in->recipe_format, (unsigned long long)in->resident_recipe_bytes);
    else
        printf("%s: %s\n"
               "  size            %llu bytes (%s)\n"
               "  block size      %s\n"
               "  slots           %llu, %llu used\n"
               "  unique objects  %llu, %llu bytes stored (%s)\n"
               "  recipe          format v%d, %llu bytes on disk, %llu in memory, generation "
               "%llu\n",
               r->name, in->readonly ? "snapshot (read-only)" : "volume",
               (unsigned long long)in->size, human_size(in->size, h1),
               human_size(in->block_size, h2), (unsigned long long)in->slots,
               (unsigned long long)in->used_slots, (unsigned long long)in->unique_objects,
               (unsigned long long)in->stored_bytes, human_size(in->stored_bytes, h3),
               in->recipe_format, (unsigned long long)in->recipe_bytes,
               (unsigned long long)in->resident_recipe_bytes, (unsigned long long)in->generation);
    if (fflush(stdout) != 0)
        return cli_error(r->cmd, "writing stdout: %s", strerror(errno));
    return 0;
}

static const struct volume_command volume_commands[] = {
    {"create", volume_create, "create an empty volume of a given size",
     TROVE_STORE_CREATE, 0, 0,
     {"usage: trove volume create NAME --size SIZE [--block-size SIZE] [--recipe-format F]\n"
      "                           [--store DIR]\n"
      "\n"
      "Create volume NAME of SIZE bytes, every block empty (reads as zeros). NAME is 1..128\n"
      "bytes of letters, digits, '.', '_' and '-', not starting with '.' or '-'. The store is\n"
      "created if it does not exist.\n"
      "  --size SIZE        the volume's size in bytes\n"
      "  --block-size SIZE  bytes per block: a power of two from 4K to 1G (default 2M);\n"
      "                     the unit of deduplication\n"
      "  --recipe-format F  v4 (default, or $TROVE_RECIPE_FORMAT: a dictionary plus a\n"
      "                     bit-packed column, in objects"
" a commit rewrites only where\n"
      "                     they changed) or v1 (one file, one digest per slot, for older\n"
      "                     readers)\n" STORE_HELP SIZE_HELP,
      CLI_OPT_SIZE | CLI_OPT_BLOCK_SIZE | CLI_OPT_FORMAT, CLI_OPT_SIZE, 1, 1}},
    {"put", volume_put, "store a whole file as a volume (created or resized to fit)",
     TROVE_STORE_CREATE, 0, 1,
     {"usage: trove volume put NAME FILE [--block-size SIZE] [--recipe-format F] [--json]\n"
      "                        [-q] [--store DIR]\n"
      "\n"
      "Make volume NAME hold exactly the bytes of FILE ('-' for stdin): it is created with\n"
      "the file's size if it does not exist, else resized to it, then written block by block\n"
      "and committed. Blocks already in the store are not stored again. The store is created\n"
      "if it does not exist. A volume whose recipe is damaged is written anew over it (which\n"
      "heals it). A summary goes to stderr.\n"
      "  --block-size SIZE  bytes per block of a new volume: a power of two from 4K to 1G\n"
      "                     (default 2M)\n"
      "  --recipe-format F  v4 (default, or $TROVE_RECIPE_FORMAT: a dictionary plus a\n"
      "                     bit-packed column, in objects a commit rewrites only where\n"
      "                     they changed) or v1 (one file, one digest per slot, for older\n"
      "                     readers); given for an existing volume: converts it\n"
      "  --json             print the result as one JSON object on stdout: volume, input,\n"
      "                     bytes, block_size, slots, used_slots, unique_objects,\n"
      "                     stored_bytes, generation\n"
      "  -q, --quiet        no summary\n"
      "  -v, --verbose      the summary (the default; kept for older scripts)\n"
      STORE_HELP SIZE_HELP,
      CLI_OPT_BLOCK_SIZE | CLI_OPT_VERBOSE | CLI_OPT_FORMAT | CLI_OPT_JSON | CLI_OPT_QUIET, 0, 2,
      2}},
    {"write", volume_write, "write a file's bytes into a volume at an offset",
     0, 1, 1,
     {"usage: trove volume write NAME --offset N FILE [--store DIR]\n"
      "\n"
      "Write the bytes of FILE ('-' for stdin) into volume NAME from byte N on, and commit.\n"
      "The bytes must fit inside the volume (see `trove volume resize`).\n"
      "  --offset N         where the first byte goes\n" STORE_HELP SIZE_HELP,
      CLI_OPT_OFFSET, CLI_OPT_OFFSET, 2, 2}},
    {"read", volume_read, "read a byte range of a volume to stdout",
     TROVE_STORE_READONLY, 1, 0,
     {"usage: trove volume read NAME [--offset N] [--length L] [--no-verify] [--store DIR]\n"
      "\n"
      "Write L bytes of volume or snapshot NAME, from byte N on, to stdout. Every block is\n"
      "checked against its name first; a damaged one stops the read with an error.\n"
      "  --offset N         the first byte (default 0)\n"
      "  --length L         how many bytes (default: to the end)\n" NO_VERIFY_HELP STORE_HELP
      SIZE_HELP,
      CLI_OPT_OFFSET | CLI_OPT_LENGTH | CLI_OPT_NO_VERIFY, 0, 1, 1}},
    {"cat", volume_cat, "write a whole volume to stdout",
     TROVE_STORE_READONLY, 1, 0,
     {"usage: trove volume cat NAME [--no-verify] [--store DIR]\n"
      "\n"
      "Write every byte of volume or snapshot NAME to stdout (progress on stderr when it is\n"
      "a terminal). Every block is checked against its name first; a damaged one stops the\n"
      "output with an error naming the slot and the object.\n" NO_VERIFY_HELP STORE_HELP,
      CLI_OPT_NO_VERIFY, 0, 1, 1}},
    {"ls", volume_ls, "list the volumes and snapshots",
     TROVE_STORE_READONLY, 0, 0,
     {"usage: trove volume ls [--json] [--store DIR]\n"
      "\n"
      "List the volumes and snapshots of the store by name, one a line: kind (volume or\n"
      "snapshot), size, block size, slots and generation (commits). A volume whose recipe\n"
      "cannot be read is listed with the reason.\n"
      "  --json             one JSON array of objects {name, kind, objects, size, block_size,\n"
      "                     slots, generation, recipe_bytes}, or {name, error}\n" STORE_HELP,
      CLI_OPT_JSON, 0, 0, 0}},
    {"info", volume_info, "describe a volume: slots, objects, bytes stored",
     TROVE_STORE_READONLY, 1, 0,
     {"usage: trove volume info NAME [--json] [--store DIR]\n"
      "\n"
      "Describe volume or snapshot NAME: size, block size, slots (used), distinct objects and\n"
      "their bytes, recipe size and generation.\n"
      "  --json             one JSON object: slots, used_slots, unique_objects, logical_bytes,\n"
      "                     stored_bytes, recipe_bytes, recipe_format, resident_recipe_bytes\n"
      STORE_HELP,
      CLI_OPT_JSON, 0, 1, 1}},
    {"resize", volume_resize, "grow or shrink a volume",
     0, 1, 0,
     {"usage: trove volume resize NAME --size SIZE [--store DIR]\n"
      "\n"
      "Change the size of volume NAME and commit. Growing adds bytes that read as zeros;\n"
      "shrinking drops the bytes past the new end.\n"
      "  --size SIZE        the new size in bytes\n" STORE_HELP SIZE_HELP,
      CLI_OPT_SIZE, CLI_OPT_SIZE, 1, 1}},
    {"compact", volume_compact, "renumber a volume's recipe dictionary (unshares snapshots)",
     0, 1, 0,
     {"usage: trove volume compact NAME [--recipe-format F] [--store DIR]\n"
      "\n"
      "Renumber the dictionary of volume NAME's recipe in slot order and commit, rewriting\n"
      "every column segment and dictionary chunk: freed dictionary entries go, and a volume\n"
      "without duplicate blocks gets an identity column again. Snapshots taken before keep\n"
      "their own recipe objects, so they no longer share the volume's (their blocks are still\n"
      "shared). Never done implicitly.\n"
      "  --recipe-format F  v4 (default, or $TROVE_RECIPE_FORMAT: a dictionary plus a\n"
      "                     bit-packed column, in objects"
" a commit rewrites only where\n"
      "                     they changed) or v1 (one file, one digest per slot, for older\n"
      "                     readers)\n" STORE_HELP,
      CLI_OPT_FORMAT, 0, 1, 1}},
    {"rm", volume_rm, "remove a volume or snapshot (`trove gc` frees its blocks)",
     0, 0, 0,
     {"usage: trove volume rm NAME [--store DIR]\n"
      "\n"
      "Remove volume or snapshot NAME. Its blocks stay in the store until `trove gc`, which\n"
      "deletes those no other volume or snapshot names.\n" STORE_HELP,
      0, 0, 1, 1}},
};

static void volume_usage(FILE *f)
{
    fprintf(f, "usage: trove volume <subcommand> NAME [options]\n\nsubcommands:\n");
    for (size_t i = 0; i < sizeof volume_commands / sizeof volume_commands[0]; i++)
        fprintf(f, "  %-7s %s\n", volume_commands[i].name, volume_commands[i].summary);
    fprintf(f, "\nA volume is a byte array kept as blocks in a deduplicating store (--store DIR;\n"
               "default $TROVE_STORE, else ./trove-data). `trove volume <subcommand> --help`\n"
               "describes a subcommand.\n");
}

/* Open what c needs, run it, close it all. Returns the exit status. */
static int run(const struct volume_command *c, const char *cmd, const struct cli_store_args *a)
{
    struct volume_run r;
    struct trove_diag diag = {0};
    int rc, status = 1;

    memset(&r, 0, sizeof r);
    r.cmd = cmd;
    r.a = a;
    r.name = a->nargs > 0 ? a->arg[0] : NULL;
    if (r.name && (rc = trove_volume_name_check(r.name, &diag)) != TROVE_OK) {
        /* The message names the name and the rule it breaks. */
        cli_error(cmd, "%s", diag.msg[0] ? diag.msg : trove_strerror(rc));
        goto out;
    }
    if (c->input) {
        struct stat st;
        r.in_name = strcmp(a->arg[1], "-") ? a->arg[1] : "stdin";
        if (!(r.in = strcmp(a->arg[1], "-") ? fopen(a->arg[1], "rb") : stdin)) {
            cli_error(cmd, "cannot open %s: %s", a->arg[1], strerror(errno));
            goto out;
        }
        r.in_size = fstat(fileno(r.in), &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
    }
    if (a->given & CLI_OPT_NO_VERIFY)
        cli_store_no_verify();
    if (cli_store_open(cmd, a->store, c->store_flags, &r.s))
        goto out;
    if (c->open_volume) {
        rc = trove_volume_open(r.s, r.name, &r.v, &diag);
        if (rc == TROVE_ERR_NOTFOUND) {
            no_volume(&r);
            goto out;
        }
        if (rc != TROVE_OK) { /* a damaged recipe: the message names its file */
            cli_error(cmd, "%s: %s", r.name, cli_diag_msg(&diag, rc));
            goto out;
        }
        if ((rc = trove_volume_info(r.v, &r.info)) != TROVE_OK) {
            cli_error(cmd, "%s: %s", r.name, vol_err(&r, rc));
            goto out;
        }
    }
    status = c->fn(&r);
out:
    if (r.in && r.in != stdin)
        fclose(r.in);
    trove_volume_close(r.v);
    cli_store_close(r.s);
    return status;
}

int cmd_volume(int argc, char **argv)
{
    struct cli_store_args a;
    char cmd[32];
    int rc;

    if (argc < 2) {
        volume_usage(stderr);
        return 2;
    }
    if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
        volume_usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof volume_commands / sizeof volume_commands[0]; i++) {
        const struct volume_command *c = &volume_commands[i];
        if (strcmp(argv[1], c->name) != 0)
            continue;
        snprintf(cmd, sizeof cmd, "volume %s", c->name);
        if ((rc = cli_store_args_parse(cmd, argc - 1, argv + 1, &c->usage, &a)) >= 0)
            return rc;
        return run(c, cmd, &a);
    }
    cli_error("volume", "'%s' is not a volume subcommand; see `trove volume --help`", argv[1]);
    return 2;
}
