#!/usr/bin/env bash
# cli_install.sh: what `make install` puts where, and that a program builds against it out of
# tree with nothing but pkg-config. The build directory of the trove binary is installed
# into a temporary DESTDIR (`cmake --install`, as the Makefile's install target does): the
# binary, libtrove and libtrove-client (.a, and .so with the symlink chain and a versioned
# soname), the public headers (not testing.h), trove.pc and trove-client.pc, each file in
# install_manifest.txt; the shared libraries export the functions of the installed headers
# and nothing else. Then examples/sort.c is compiled with `pkg-config --cflags --libs
# trove-client` alone and run without a service against the installed libtrove-client.so,
# and again linked with --static against libtrove-client.a; a small program is built
# against trove.pc the same two ways (and once with every object of libtrove.a, which
# proves that --static names every library libtrove.a needs); client.h is compiled as C++.
# A sanitized build (TROVE_SANITIZE, TROVE_TSAN) installs libraries that need the
# sanitizer's runtime at link time: there only the layout is checked.
# usage: cli_install.sh TROVE SOURCE_DIR
set -u
trove=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
srcdir=$(cd "$2" && pwd)
build=$(dirname "$trove")
. "$(dirname "$0")/../support/lib_cli.sh"
cache=$build/CMakeCache.txt
[ -f "$cache" ] || { echo "skip: no CMakeCache.txt beside $trove"; exit 77; }
for tool in pkg-config readelf nm; do
    command -v $tool > /dev/null 2>&1 || { echo "skip: $tool not found"; exit 77; }
done
cached() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
# same WHAT FILE1 FILE2: the two lists are equal (else the difference is shown).
same() {
    if cmp -s "$2" "$3"; then ok; else bad "$1 differ:"; diff "$2" "$3" >&2; fi
}
sanitized=
for opt in TROVE_SANITIZE TROVE_TSAN; do
    case "$(cached $opt)" in ON | on | TRUE | true | YES | yes | 1) sanitized=$opt ;; esac
done
version=$("$trove" --version | awk '{print $2}')
major=${version%%.*}
check test -n "$version"

# install DEST PREFIX: cmake --install of this build into DEST (DESTDIR) under PREFIX.
install_to() {
    DESTDIR=$1 cmake --install "$build" --prefix "$2" > "$tmp/install.out" 2>&1 ||
        bad "cmake --install --prefix $2: $(tail -5 "$tmp/install.out")"
}
# Where GNUInstallDirs puts a kind of file under prefix $2 of DESTDIR $1 (relative
# directories are under the prefix, absolute ones are where they say).
dir_of() {
    local d
    d=$(cached "CMAKE_INSTALL_$3")
    case "$d" in /*) echo "$1$d" ;; *) echo "$1$2/$d" ;; esac
}

# The .pc files name the prefix given to cmake --install, not the one configured.
if section pc_prefix; then
install_to "$tmp/other" /opt/trove-elsewhere
check grep -qx 'prefix=/opt/trove-elsewhere' "$(dir_of "$tmp/other" /opt/trove-elsewhere LIBDIR)/pkgconfig/trove.pc"
rm -rf "$tmp/other"
fi

dest=$tmp/dest
prefix=/usr/local
install_to "$dest" $prefix
bin=$(dir_of "$dest" $prefix BINDIR)
lib=$(dir_of "$dest" $prefix LIBDIR)
inc=$(dir_of "$dest" $prefix INCLUDEDIR)

# The layout.
if section layout; then
check test -x "$bin/trove"
check test "$("$bin/trove" --version)" = "trove $version"
for l in trove trove-client; do
    check test -f "$lib/lib$l.a"
    check test "$(readlink "$lib/lib$l.so")" = "lib$l.so.$major"
    check test "$(readlink "$lib/lib$l.so.$major")" = "lib$l.so.$version"
    check test -f "$lib/lib$l.so.$version"
    check test ! -L "$lib/lib$l.so.$version"
    soname=$(readelf -d "$lib/lib$l.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
    check test "$soname" = "lib$l.so.$major"
    check test -f "$lib/pkgconfig/$l.pc"
    check grep -qx "prefix=$prefix" "$lib/pkgconfig/$l.pc"
    check grep -qx "Version: $version" "$lib/pkgconfig/$l.pc"
    # libdir and includedir are written relative to the prefix, and resolve to where the
    # files went.
    check grep -q '^libdir=\${exec_prefix}/\|^libdir=/' "$lib/pkgconfig/$l.pc"
    got=$(PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config --variable=libdir $l)
    check test "$dest$got" = "$lib"
    got=$(PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config --variable=includedir $l)
    check test "$dest$got" = "$inc"
done
n_headers=0
for h in "$srcdir"/include/trove/*.h; do
    name=$(basename "$h")
    if [ "$name" = testing.h ]; then
        check test ! -e "$inc/trove/$name"
    else
        check cmp -s "$h" "$inc/trove/$name"
        n_headers=$((n_headers + 1))
    fi
done
check test "$(ls "$inc/trove" | wc -l)" = $n_headers
# Every file installed is in the manifest, and no other, by its path without DESTDIR (the
# Makefile puts DESTDIR in front for `make uninstall`, in a copy of its own: the manifest
# this test leaves behind is not the one that removes anything).
(cd "$dest" && find . ! -type d | sed 's|^\.||' | sort) > "$tmp/found.txt"
sort "$build/install_manifest.txt" > "$tmp/manifest.txt"
same "the files installed (<) and install_manifest.txt (>)" "$tmp/found.txt" "$tmp/manifest.txt"
fi

# The exports: libtrove.so the functions the installed headers declare (static inline ones
# aside), libtrove-client.so those of client.h; gcc's -aux-info lists the declarations.
if section exports; then
exports() { nm -D --defined-only "$1" | awk '{print $3}' | sort; }
check test -z "$(exports "$lib/libtrove.so.$version" | grep -v '^trove_[a-z]')"
check test -z "$(exports "$lib/libtrove-client.so.$version" | grep -v '^trove_client_')"
for h in "$inc"/trove/*.h; do echo "#include <trove/$(basename "$h")>"; done > "$tmp/all.c"
if cc -I"$inc" -aux-info "$tmp/aux.txt" -fsyntax-only "$tmp/all.c" 2> /dev/null; then
    # declared [HEADER]: the functions HEADER (else every installed header) declares.
    declared() {
        grep -F "$inc/trove/${1:-}" "$tmp/aux.txt" | grep -v 'static' |
            sed -n 's/^[^(]*[ *]\(trove_[a-z0-9_]*\) (.*/\1/p' | sort -u
    }
    declared > "$tmp/declared.txt"
    exports "$lib/libtrove.so.$version" > "$tmp/exported.txt"
    check test "$(wc -l < "$tmp/declared.txt")" -gt 100
    same "the functions declared (<) and libtrove.so's exports (>)" "$tmp/declared.txt" "$tmp/exported.txt"
    check test "$(declared client.h:)" = "$(exports "$lib/libtrove-client.so.$version")"
else
    echo "note: cc has no -aux-info; the export lists are checked by prefix only"
fi
fi

if [ -n "$sanitized" ]; then
    echo "note: a $sanitized build: its libraries need the sanitizer at link time, so the" \
        "out-of-tree builds are left to the plain build"
    finish
    exit
fi

# Out of tree, with pkg-config only. A DESTDIR install is not yet at its prefix: the
# sysroot puts DESTDIR in front of the .pc's paths. For trove-client, PKG_CONFIG_LIBDIR
# holds the installed .pc alone (it requires no other); trove.pc requires the system's
# .pc files of its libraries, so there the default search path stays (and their own
# paths also get the sysroot in front: directories that do not exist, which cc skips).
pc_client() { PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$lib/pkgconfig pkg-config "$@"; }
pc_trove() { PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$lib/pkgconfig pkg-config "$@"; }
check test "$(pc_client --modversion trove-client)" = "$version"
check test "$(pc_trove --modversion trove)" = "$version"
cd "$tmp" || exit 1
cp "$srcdir/examples/sort.c" "$tmp/sort.c"
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
# compile OUT SOURCE FLAGS...: cc, warnings as errors; a failure is reported.
compile() {
    local out=$1 src=$2
    shift 2
    cc -O2 -Wall -Wextra -Werror -o "$out" "$src" "$@" 2> "$tmp/cc.err" ||
        { bad "cc -o $out $src $*: $(head -c 2000 "$tmp/cc.err")"; return 1; }
}
# run_sort PROGRAM: the example sorts 200,000 keys with no service and finishes.
run_sort() {
    TROVE_SOCKET=$tmp/nowhere.sock timeout 60 "$@" 200000 > "$tmp/sort.out" 2> "$tmp/sort.err" ||
        { bad "$*: $(cat "$tmp/sort.err")"; return; }
    local keys recorded sent
    read -r _ keys _ recorded _ _ sent _ _ < "$tmp/sort.out"
    check test "$keys" = 200000
    check test "$recorded" -gt 100
    check test "$sent" = 0
}

# The example, against libtrove-client.so: its soname is what the program needs, found in
# DESTDIR through LD_LIBRARY_PATH.
if section client_example; then
if compile sort-shared sort.c $(pc_client --cflags --libs trove-client); then
    check test "$(needed sort-shared | grep trove)" = "libtrove-client.so.$major"
    check test "$(LD_LIBRARY_PATH=$lib ldd sort-shared | awk '$1 ~ /trove/ {print $3}')" = \
        "$lib/libtrove-client.so.$major"
    run_sort env LD_LIBRARY_PATH="$lib" ./sort-shared
fi
# ... and against libtrove-client.a (the .so would win over -ltrove-client).
libs=$(pc_client --static --libs trove-client | sed 's/-ltrove-client\b/-l:libtrove-client.a/')
if compile sort-static sort.c $(pc_client --cflags trove-client) $libs; then
    check test -z "$(needed sort-static | grep trove)"
    run_sort ./sort-static
fi
fi

# A program of libtrove: its version, an error's name, and a deflate frame (libdeflate).
if section libtrove_program; then
cat > version.c << 'EOF'
#include <stdio.h>
#include <string.h>

#include <trove/wire.h>

int main(void)
{
    struct trove_event in[3] = {{.start_ns = 100, .dur_ns = 5, .pid = 1, .tid = 2, .name_id = 1},
                                {.start_ns = 110, .dur_ns = 2, .pid = 1, .tid = 2, .depth = 1},
                                {.start_ns = 120, .pid = 1, .tid = 3, .kind = TROVE_KIND_INSTANT}};
    struct trove_event out[3];
    struct trove_bytes frame = {0};
    struct trove_wire_encoder *enc = NULL;
    struct trove_wire_decoder *dec = NULL;
    struct trove_wire_frame got;
    int rc = trove_wire_encoder_new(&enc);
    if (rc == 0)
        rc = trove_wire_encode(enc, TROVE_WIRE_DEFLATE, in, 3, &frame);
    if (rc == 0)
        rc = trove_wire_decoder_new(&dec);
    if (rc == 0)
        rc = trove_wire_decode(dec, frame.ptr, frame.len, out, 3, NULL, &got, NULL);
    if (rc == 0 && (got.n_events != 3 || memcmp(in, out, sizeof in) != 0))
        rc = TROVE_ERR_MISMATCH;
    printf("%s %s %s\n", trove_version(), trove_strerror(TROVE_ERR_CORRUPT), trove_strerror(rc));
    trove_wire_encoder_free(enc);
    trove_wire_decoder_free(dec);
    trove_bytes_free(&frame);
    return rc != 0;
}
EOF
# run_version PROGRAM...: it prints the version and two error names, and exits 0.
run_version() {
    "$@" > "$tmp/v.out" 2>&1 || { bad "$*: $(cat "$tmp/v.out")"; return; }
    read -r v _ < "$tmp/v.out"
    check test "$v" = "$version"
    check test "$(wc -w < "$tmp/v.out")" -ge 3
}
if compile version-shared version.c $(pc_trove --cflags --libs trove); then
    check test "$(needed version-shared | grep trove)" = "libtrove.so.$major"
    run_version env LD_LIBRARY_PATH="$lib" ./version-shared
fi
libs=$(pc_trove --static --libs trove | sed 's/-ltrove\b/-l:libtrove.a/')
if compile version-static version.c $(pc_trove --cflags trove) $libs; then
    check test -z "$(needed version-static | grep trove)"
    run_version ./version-static
fi
# Every object of libtrove.a linked in: each library any of them needs is named by
# pkg-config --static.
whole=$(pc_trove --static --libs trove |
    sed 's/-ltrove\b/-Wl,--whole-archive -l:libtrove.a -Wl,--no-whole-archive/')
if compile version-whole version.c $(pc_trove --cflags trove) $whole; then
    run_version ./version-whole
fi
fi

# Every installed header compiles on its own.
if section headers_alone; then
for h in "$inc"/trove/*.h; do
    echo "#include <trove/$(basename "$h")>" > one.c
    cc -std=c11 -Wall -Wextra -Werror -fsyntax-only $(pc_trove --cflags trove) one.c 2> "$tmp/cc.err" ||
        bad "trove/$(basename "$h") alone: $(head -c 1000 "$tmp/cc.err")"
done
fi

# client.h from C++: a zone is an object that closes it at the end of its scope.
if section client_h_cxx; then
if command -v c++ > /dev/null 2>&1; then
    cat > zone.cc << 'EOF'
#include <cstdio>

#include <trove/client.h>

static int work(int n)
{
    TROVE_ZONE("work");
    int s = 0;
    for (int i = 0; i < n; i++) {
        TROVE_ZONE("step");
        s += i;
    }
    TROVE_INSTANT("done");
    TROVE_COUNTER("sum", s);
    return s;
}

int main()
{
    trove_client_options opts = {};
    opts.capture = "install-cxx";
    if (trove_client_start(&opts) != 0)
        return 1;
    int s = work(100);
    trove_client_stop();
    struct trove_client_stats st;
    trove_client_stats(&st);
    std::printf("%d %llu\n", s, (unsigned long long)st.events);
    return 0;
}
EOF
    if c++ -std=c++11 -O2 -Wall -Wextra -Werror -o zone zone.cc \
        $(pc_client --cflags --libs trove-client) 2> "$tmp/cc.err"; then
        TROVE_SOCKET=$tmp/nowhere.sock LD_LIBRARY_PATH=$lib ./zone > "$tmp/zone.out" 2>&1 ||
            bad "zone (C++): $(cat "$tmp/zone.out")"
        # 100 steps, the work zone, the instant and the counter.
        check test "$(cat "$tmp/zone.out")" = "4950 103"
    else
        bad "client.h from C++: $(head -c 2000 "$tmp/cc.err")"
    fi
else
    echo "note: no C++ compiler (c++): client.h from C++ not checked"
fi
fi

finish
