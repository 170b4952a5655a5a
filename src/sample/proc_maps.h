/*
 * proc_maps.h (internal): what the sampler reads of a process from /proc (proc_maps.c) —
 * its mappings (/proc/PID/maps), its threads (/proc/PID/task), their names (comm) — and
 * the GNU build id of an ELF file (elf_id.c).
 */
#ifndef TROVE_SAMPLE_PROC_MAPS_H
#define TROVE_SAMPLE_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>

#include "spaces.h"
#include "trove/sample.h"

/* One line of /proc/PID/maps: "START-END PERMS OFFSET MAJ:MIN INODE [PATH]". */
struct trove__maps_line {
    uint64_t start, end, offset;
    uint32_t dev_major, dev_minor;
    uint64_t inode;
    char perms[5];    /* "r-xp" */
    const char *path; /* within the line, path_len bytes (0: an anonymous mapping) */
    size_t path_len;
};

/* Parse line[0..len) (no line end). TROVE_OK, or TROVE_ERR_CORRUPT for a line that is not
 * of that form (end <= start, a field missing or out of range). */
int trove__maps_parse_line(const char *line, size_t len, struct trove__maps_line *out);

/* Should a mapping of this path (and perms) be a module? Executable mappings of files (a
 * path starting '/') and of the kernel's "[vdso]". */
int trove__maps_is_module(const char *perms, const char *path, size_t path_len);

/*
 * Read /proc/PID/maps and put each module mapping into sp (pid's space) and its module
 * into set, with the build id read from the file as the process sees it
 * (/proc/PID/map_files/START-END, else /proc/PID/root/PATH, else PATH). *added (may be
 * NULL) gets the mappings added. Errors: -errno of reading the file (-ENOENT: no such
 * process), TROVE_ERR_NOMEM, TROVE_ERR_LIMIT.
 */
int trove__proc_maps_load(uint32_t pid, struct trove_sample_set *set, struct trove__spaces *sp,
                          uint64_t *added);

/* The thread ids of pid (/proc/PID/task) into *tids (malloc'd; the caller frees it) and
 * *n. Errors: -errno (-ENOENT: no such process), TROVE_ERR_NOMEM. */
int trove__proc_tasks(uint32_t pid, uint32_t **tids, size_t *n);

/* The comm of thread tid of pid (/proc/PID/task/TID/comm) into buf[0..cap), NUL-terminated,
 * its line end dropped: 0, or -1 if it cannot be read. */
int trove__proc_comm(uint32_t pid, uint32_t tid, char *buf, size_t cap);

/* Is process pid there and not a zombie? 1 or 0. */
int trove__proc_alive(uint32_t pid);

/* The GNU build id of the ELF file at path into out[0..cap): its length, 0 when the file
 * has none, cannot be read or is not ELF. */
size_t trove__elf_build_id(const char *path, uint8_t *out, size_t cap);

#endif
