/*
 * symbolize.c: module + file offset -> functions, source files and lines, with elfutils'
 * libdw (trove/sample.h, struct trove_symbolizer).
 *
 * Each module (an ELF file, known by its build id, or by its path when it has none) is
 * opened once, as a Dwfl session of its own with the file reported at its link-time
 * addresses (dwfl_report_elf, base 0 relative to p_vaddr): the process's load address does
 * not matter, since the sampler hands over file offsets, which the module's PT_LOAD
 * segments turn into link-time addresses. libdw finds the separate debug file itself
 * (/usr/lib/debug/.build-id/, .gnu_debuglink) through dwfl_standard_find_debuginfo. A file
 * whose build id is not the one the mapping had (replaced since) is not used: its
 * addresses stay module + offset.
 *
 * An address is resolved by dwarf_getscopes on its compile unit (its innermost scope) and
 * dwarf_getscopes_die (that scope's nesting in the DIE tree, innermost first), in which
 * each DW_TAG_inlined_subroutine is a function inlined into the next one out, up to the
 * DW_TAG_subprogram compiled there. The innermost
 * function's line is the line table's (dwfl_module_getsrc); each outer function's is the
 * call site of the one inlined into it (DW_AT_call_file, DW_AT_call_line). Without DWARF
 * the ELF symbol tables (symtab, else dynsym, and .gnu_debugdata) name the function.
 *
 * Results are cached per (module, offset) (addr_map.c) over one pool of symbols, so that an address is resolved once per symbolizer however many samples hold
 * it. Strings point into libdw's data and live as long as the module's session: until
 * trove_symbolizer_free.
 */
#include "trove/sample.h"
#include "addr_map.h"
#include "common/alloc.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SYMBOLS 64 /* inline levels kept per address */

struct load {
    uint64_t offset, vaddr, filesz;
};

struct module {
    char *path;
    uint8_t build_id[TROVE_SAMPLE_BUILD_ID_MAX];
    size_t build_id_len;
    Dwfl *dwfl;
    Dwfl_Module *mod; /* NULL: unusable */
    GElf_Addr bias;
    struct load *load;
    size_t n_load;
};

struct trove_symbolizer {
    struct module *m;
    size_t n_m, cap_m;
    uint32_t last; /* the module used last, checked first */
    struct trove__addr_map cache; /* (module, offset) -> its symbols in the pool */
    struct trove_symbol *pool;
    size_t n_pool, cap_pool;
    struct trove_symbolizer_stats st;
};

static char *debuginfo_path = NULL; /* libdw's default: ":.debug:/usr/lib/debug" */

static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

int trove_symbolizer_new(struct trove_symbolizer **out)
{
    if (!out)
        return TROVE_ERR_INVALID;
    if (!(*out = trove__calloc(1, sizeof **out)))
        return TROVE_ERR_NOMEM;
    return TROVE_OK;
}

void trove_symbolizer_free(struct trove_symbolizer *sym)
{
    if (!sym)
        return;
    for (size_t i = 0; i < sym->n_m; i++) {
        if (sym->m[i].dwfl)
            dwfl_end(sym->m[i].dwfl);
        free(sym->m[i].path);
        free(sym->m[i].load);
    }
    free(sym->m);
    trove__addr_map_free(&sym->cache);
    free(sym->pool);
    free(sym);
}

void trove_symbolizer_stats(const struct trove_symbolizer *sym, struct trove_symbolizer_stats *out)
{
    *out = sym->st;
}

/* Open the module's file: its Dwfl session, the check of its build id, its PT_LOADs. On
 * any failure m->mod stays NULL (the module is kept, unusable, so it is not tried again). */
static int open_module(struct module *m)
{
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    Elf *elf;
    size_t nph = 0;
    Dwfl_Module *mod;
    int n;

    if (m->path[0] != '/' || !(m->dwfl = dwfl_begin(&callbacks)))
        return TROVE_OK;
    dwfl_report_begin(m->dwfl);
    mod = dwfl_report_elf(m->dwfl, strrchr(m->path, '/') + 1, m->path, -1, 0, true);
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (!mod || !(elf = dwfl_module_getelf(mod, &m->bias)))
        return TROVE_OK;
    n = dwfl_module_build_id(mod, &bits, &vaddr);
    if (m->build_id_len &&
        (n != (int)m->build_id_len || memcmp(bits, m->build_id, m->build_id_len) != 0))
        return TROVE_OK; /* another file than the one that was mapped */
    if (elf_getphdrnum(elf, &nph) != 0 || nph == 0)
        return TROVE_OK;
    if (!(m->load = trove__mallocarray(nph, sizeof *m->load)))
        return TROVE_ERR_NOMEM;
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
            m->load[m->n_load++] = (struct load){ph.p_offset, ph.p_vaddr, ph.p_filesz};
    }
    m->mod = mod;
    return TROVE_OK;
}

/* The index of module mm in sym, opened if new; UINT32_MAX when out of memory. */
static uint32_t find_module(struct trove_symbolizer *sym, const struct trove_sample_module *mm)
{
    struct module *m;
    size_t len;
    if (sym->last < sym->n_m) {
        m = &sym->m[sym->last];
        if (m->build_id_len == mm->build_id_len && !strcmp(m->path, mm->path) &&
            (!mm->build_id_len || !memcmp(m->build_id, mm->build_id, mm->build_id_len)))
            return sym->last;
    }
    for (size_t i = 0; i < sym->n_m; i++) {
        m = &sym->m[i];
        /* A build id names a file wherever it lies; without one, the path does. */
        if (m->build_id_len == mm->build_id_len &&
            (mm->build_id_len ? !memcmp(m->build_id, mm->build_id, mm->build_id_len)
                              : !strcmp(m->path, mm->path)))
            return sym->last = (uint32_t)i;
    }
    if (sym->n_m == sym->cap_m) {
        size_t cap = sym->cap_m ? sym->cap_m * 2 : 16;
        struct module *q = trove__realloc(sym->m, cap * sizeof *q);
        if (!q)
            return UINT32_MAX;
        sym->m = q;
        sym->cap_m = cap;
    }
    m = &sym->m[sym->n_m];
    memset(m, 0, sizeof *m);
    len = strlen(mm->path);
    if (!(m->path = trove__malloc(len + 1)))
        return UINT32_MAX;
    memcpy(m->path, mm->path, len + 1);
    if (mm->build_id_len)
        memcpy(m->build_id, mm->build_id, mm->build_id_len);
    m->build_id_len = mm->build_id_len;
    if (open_module(m) != TROVE_OK) {
        if (m->dwfl)
            dwfl_end(m->dwfl);
        free(m->path);
        free(m->load);
        return UINT32_MAX;
    }
    sym->st.modules++;
    sym->st.unreadable += m->mod == NULL;
    return sym->last = (uint32_t)sym->n_m++;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *die)
{
    Dwarf_Attribute a;
    Dwarf_Word idx;
    Dwarf_Files *files;
    size_t n;
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &idx) != 0 ||
        dwarf_getsrcfiles(cu, &files, &n) != 0 || idx >= n)
        return NULL;
    return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    Dwarf_Word line;
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &line) != 0 || line > UINT32_MAX)
        return 0;
    return (uint32_t)line;
}

/* Resolve link-time address a of module m into out[0..MAX_SYMBOLS), innermost first. */
static size_t resolve(struct module *m, GElf_Addr a, struct trove_symbol *out)
{
    Dwarf_Addr cubias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(m->mod, a, &cubias);
    Dwfl_Line *ln = dwfl_module_getsrc(m->mod, a);
    const char *file = NULL, *symname;
    int line = 0;
    size_t n = 0;
    GElf_Off off;
    GElf_Sym esym;

    if (ln)
        file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
    if (line < 0)
        line = 0;
    if (cu) {
        /* dwarf_getscopes finds the innermost scope, but past an inlined instance it goes
         * on with the abstract definition's scopes; the DIE tree's own nesting of that
         * innermost scope (dwarf_getscopes_die) is the concrete chain of functions, as
         * eu-addr2line -i walks it. */
        Dwarf_Die *scopes = NULL, *chain = NULL;
        int ns = dwarf_getscopes(cu, a - cubias, &scopes);
        int nc = ns > 0 ? dwarf_getscopes_die(&scopes[0], &chain) : 0;
        uint32_t l = (uint32_t)line;
        const char *f = file;
        for (int i = 0; i < nc && n < MAX_SYMBOLS; i++) {
            int tag = dwarf_tag(&chain[i]);
            if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
                continue;
            out[n++] = (struct trove_symbol){dwarf_diename(&chain[i]), f, l, 0};
            if (tag == DW_TAG_subprogram)
                break;
            f = call_file(cu, &chain[i]);
            l = call_line(&chain[i]);
        }
        free(chain);
        free(scopes);
    }
    symname = dwfl_module_addrinfo(m->mod, a, &off, &esym, NULL, NULL, NULL);
    if (n == 0 && symname)
        out[n++] = (struct trove_symbol){symname, file, (uint32_t)line, 0};
    else if (n > 0 && !out[n - 1].function)
        out[n - 1].function = symname; /* the compiled function, named by its symbol */
    for (size_t i = 0; i < n; i++)
        out[i].inline_depth = (uint32_t)(n - 1 - i);
    return n;
}

int trove_symbolizer_lookup(struct trove_symbolizer *sym, const struct trove_sample_module *mm,
                            uint64_t offset, struct trove_symbol *out, size_t cap, size_t *n_out)
{
    struct trove_symbol got[MAX_SYMBOLS];
    const struct trove__addr_entry *hit;
    struct module *m;
    uint32_t mi;
    size_t n = 0;
    int rc;

    if (!sym || !mm || !mm->path || (cap && !out) || !n_out ||
        mm->build_id_len > TROVE_SAMPLE_BUILD_ID_MAX || (mm->build_id_len && !mm->build_id))
        return TROVE_ERR_INVALID;
    sym->st.lookups++;
    if ((mi = find_module(sym, mm)) == UINT32_MAX)
        return TROVE_ERR_NOMEM;
    if (!(hit = trove__addr_map_get(&sym->cache, mi, offset))) {
        m = &sym->m[mi];
        if (m->mod) {
            for (size_t i = 0; i < m->n_load; i++)
                if (offset >= m->load[i].offset && offset - m->load[i].offset < m->load[i].filesz) {
                    n = resolve(m, m->load[i].vaddr + (offset - m->load[i].offset) + m->bias, got);
                    break;
                }
            sym->st.resolved++;
        }
        if (sym->n_pool + n > sym->cap_pool) {
            size_t c = sym->cap_pool ? sym->cap_pool : 1024;
            struct trove_symbol *q;
            while (c < sym->n_pool + n)
                c *= 2;
            if (!(q = trove__realloc(sym->pool, c * sizeof *q)))
                return TROVE_ERR_NOMEM;
            sym->pool = q;
            sym->cap_pool = c;
        }
        if ((rc = trove__addr_map_put(&sym->cache, mi, offset, (uint32_t)sym->n_pool,
                                      (uint32_t)n)) != TROVE_OK)
            return rc;
        if (n)
            memcpy(sym->pool + sym->n_pool, got, n * sizeof *got);
        sym->n_pool += n;
        hit = trove__addr_map_get(&sym->cache, mi, offset);
    }
    n = hit->n < cap ? hit->n : cap;
    if (n)
        memcpy(out, sym->pool + hit->first, n * sizeof *out);
    *n_out = n;
    return TROVE_OK;
}
