/*
 * dw_lib.h (internal): elfutils' libdw (and the libelf it loads), loaded when the first
 * symbolizer is made or build id read (common/dl.h), not when the program starts: with them
 * come liblzma, libbz2 and libzstd's decompressors for compressed debug sections, which
 * only sampling needs. symbolize.c and elf_id.c include this instead of the elfutils
 * headers; the calls go through the table trove__dw_load fills (from libdw's handle, whose
 * lookup covers the libelf it depends on), with the types of elfutils' own headers.
 */
#ifndef TROVE_DW_LIB_H
#define TROVE_DW_LIB_H

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include "common/dl.h"

#define TROVE__DW_FUNCS(X)                                                                    \
    X(dwarf_attr) X(dwarf_diename) X(dwarf_filesrc) X(dwarf_formudata) X(dwarf_getscopes)    \
    X(dwarf_getscopes_die) X(dwarf_getsrcfiles) X(dwarf_tag) X(dwelf_elf_gnu_build_id)        \
    X(dwfl_begin) X(dwfl_build_id_find_elf) X(dwfl_end) X(dwfl_lineinfo)                     \
    X(dwfl_module_addrdie) X(dwfl_module_addrinfo) X(dwfl_module_build_id)                   \
    X(dwfl_module_getelf) X(dwfl_module_getsrc) X(dwfl_offline_section_address)              \
    X(dwfl_report_begin) X(dwfl_report_elf) X(dwfl_report_end)                               \
    X(dwfl_standard_find_debuginfo) X(elf_begin) X(elf_end) X(elf_getphdrnum) X(elf_kind)    \
    X(elf_version) X(gelf_getphdr)

struct trove__dw_api {
    TROVE__DW_FUNCS(TROVE__DL_FIELD)
};
extern struct trove__dw_api trove__dw_api;

/* Load libdw (once). TROVE_OK, or TROVE_ERR_NOTFOUND with diag (may be NULL) naming it. */
int trove__dw_load(struct trove_diag *diag);

#define dwarf_attr (trove__dw_api.dwarf_attr)
#define dwarf_diename (trove__dw_api.dwarf_diename)
#define dwarf_filesrc (trove__dw_api.dwarf_filesrc)
#define dwarf_formudata (trove__dw_api.dwarf_formudata)
#define dwarf_getscopes (trove__dw_api.dwarf_getscopes)
#define dwarf_getscopes_die (trove__dw_api.dwarf_getscopes_die)
#define dwarf_getsrcfiles (trove__dw_api.dwarf_getsrcfiles)
#define dwarf_tag (trove__dw_api.dwarf_tag)
#define dwelf_elf_gnu_build_id (trove__dw_api.dwelf_elf_gnu_build_id)
#define dwfl_begin (trove__dw_api.dwfl_begin)
#define dwfl_build_id_find_elf (trove__dw_api.dwfl_build_id_find_elf)
#define dwfl_end (trove__dw_api.dwfl_end)
#define dwfl_lineinfo (trove__dw_api.dwfl_lineinfo)
#define dwfl_module_addrdie (trove__dw_api.dwfl_module_addrdie)
#define dwfl_module_addrinfo (trove__dw_api.dwfl_module_addrinfo)
#define dwfl_module_build_id (trove__dw_api.dwfl_module_build_id)
#define dwfl_module_getelf (trove__dw_api.dwfl_module_getelf)
#define dwfl_module_getsrc (trove__dw_api.dwfl_module_getsrc)
#define dwfl_offline_section_address (trove__dw_api.dwfl_offline_section_address)
#define dwfl_report_begin (trove__dw_api.dwfl_report_begin)
#define dwfl_report_elf (trove__dw_api.dwfl_report_elf)
#define dwfl_report_end (trove__dw_api.dwfl_report_end)
#define dwfl_standard_find_debuginfo (trove__dw_api.dwfl_standard_find_debuginfo)
#define elf_begin (trove__dw_api.elf_begin)
#define elf_end (trove__dw_api.elf_end)
#define elf_getphdrnum (trove__dw_api.elf_getphdrnum)
#define elf_kind (trove__dw_api.elf_kind)
#define elf_version (trove__dw_api.elf_version)
#define gelf_getphdr (trove__dw_api.gelf_getphdr)

#endif
