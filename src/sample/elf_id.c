/*
 * elf_id.c: the GNU build id of an ELF file (proc_maps.h), the key by which the symbolizer
 * caches a module and checks that the file it opens is the one that was mapped. Read
 * through libelf and libdw's dwelf_elf_gnu_build_id, which looks in the PT_NOTE segments
 * and then the note sections.
 */
#include "proc_maps.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

size_t trove__elf_build_id(const char *path, uint8_t *out, size_t cap)
{
    const void *id = NULL;
    ssize_t n = 0;
    Elf *elf;
    int fd;

    if (elf_version(EV_CURRENT) == EV_NONE)
        return 0;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    if ((elf = elf_begin(fd, ELF_C_READ_MMAP, NULL)) != NULL) {
        if (elf_kind(elf) == ELF_K_ELF)
            n = dwelf_elf_gnu_build_id(elf, &id);
        if (n > 0 && (size_t)n <= cap)
            memcpy(out, id, (size_t)n);
        else
            n = 0;
        elf_end(elf);
    }
    close(fd);
    return (size_t)n;
}
