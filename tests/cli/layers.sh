#!/usr/bin/env bash
# layers.sh: the layer graph is enforced by the build, not by prose. Run by ctest as
#   layers.sh SOURCE_DIR PYTHON CC CODEC_INCLUDES STORE_INCLUDES --layer=... (the graph)
# It checks that the tree keeps the graph, that check_layers.py refuses an upward include,
# a reach into another layer's internal header (from a layer's subdirectory too), a circle
# of files and a .c file of src/, tests/unit/ or cli/ past 1,300 lines (each made on
# purpose in a copy of the tree), that the compiler itself cannot find another layer's
# internal header with a layer's own include path, and that a configured build of a bad
# copy fails.
set -u
src=$1 py=$2 cc=$3 codec_inc=$4 store_inc=$5
shift 5
graph=("$@")
. "$src/tests/support/lib_cli.sh" # its $tmp, removed at exit

check_tree() { "$py" "$src/tools/check_layers.py" --root "$1" "${graph[@]}" 2> "$tmp/err"; }
fresh_copy() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t"
    cp -r "$src/src" "$src/include" "$src/cli" "$src/tools" "$src/bench" "$src/examples" \
        "$src/cmake" "$src/CMakeLists.txt" "$tmp/t/"
    rm -rf "$tmp/t/tools/duckdb"
}
# expect_refused WHAT MESSAGE: the checker fails on $tmp/t and says MESSAGE.
expect_refused() {
    if check_tree "$tmp/t"; then
        bad "$1: check_layers.py accepted it"
    elif grep -q -- "$2" "$tmp/err"; then
        ok
    else
        bad "$1: expected '$2', got: $(cat "$tmp/err")"
    fi
}

# The tree as it is keeps the graph.
if section real_tree; then
check check_tree "$src"
[ -s "$tmp/err" ] && bad "check_layers printed on the real tree: $(cat "$tmp/err")"
fi

# An upward include: codec (below store) including the store's public header.
if section upward; then
fresh_copy
sed -i '0,/#include "trove\/event.h"/s//#include "trove\/event.h"\n#include "trove\/store.h"/' \
    "$tmp/t/src/codec/names.c"
grep -q 'trove/store.h' "$tmp/t/src/codec/names.c" || bad "could not plant the upward include"
expect_refused "upward include" "src/codec/names.c:[0-9]*: #include \"trove/store.h\": layer codec may not include layer store"
fi

# A sideways include of a public header: columnar and store are both above codec, apart.
if section sideways; then
fresh_copy
printf '#include "trove/volume.h"\n' >> "$tmp/t/src/columnar/snappy.c"
expect_refused "sideways include" "layer columnar may not include layer store"
fi

# Another layer's internal header, by path.
if section internal_header; then
fresh_copy
printf '#include "store/dict.h"\n' >> "$tmp/t/src/capture/marker.c"
expect_refused "internal header of another layer" "reaches into another layer's internal headers"
fi

# A bare name that is not in the file's own directory.
if section bare_name; then
fresh_copy
printf '#include "dict.h"\n' >> "$tmp/t/src/stream/bg.c"
expect_refused "bare name from elsewhere" "a bare include must name a header in src/stream"
fi

# A layer's subdirectory reaches its layer's own internal headers by bare name (and the
# layer reaches down into it by path), but not another layer's, by bare name or by "..".
if section subdirectory; then
fresh_copy
printf '#include "store_internal.h"\n#include "backend_internal.h"\n' > "$tmp/t/src/store/s3/planted.c"
printf '#include "s3/s3_xml.h"\n' >> "$tmp/t/src/store/name.c"
if check_tree "$tmp/t"; then ok; else bad "src/store/s3/ may include store's internal headers: $(cat "$tmp/err")"; fi
fresh_copy
printf '#include "bufpool.h"\n' > "$tmp/t/src/store/s3/planted.c"
expect_refused "subdirectory, another layer's header by bare name" \
    "src/store/s3/planted.c:1: #include \"bufpool.h\": a bare include must name a header in src/store/s3 or src/store"
fresh_copy
printf '#include "../../stream/bufpool.h"\n' > "$tmp/t/src/store/s3/planted.c"
expect_refused "subdirectory, another layer's header by path" \
    "src/store/s3/planted.c:1: #include \"../../stream/bufpool.h\": reaches into another layer's internal headers"
fresh_copy
printf '#include "../store/s3/s3_xml.h"\n' >> "$tmp/t/src/stream/bg.c"
expect_refused "another layer's subdirectory by path" "src/stream/bg.c:[0-9]*: #include \"../store/s3/s3_xml.h\": reaches into"
fi

# A .c file of src/ past 1,300 lines: one job per file.
if section long_file; then
fresh_copy
yes '/* padding */' | head -n 1301 >> "$tmp/t/src/codec/names.c"
expect_refused "a long file" "src/codec/names.c: [0-9]* lines, more than the 1300"
# ... and so for a unit test and a file of cli/ (the copy has no tests/: one is planted).
fresh_copy
mkdir -p "$tmp/t/tests/unit"
yes '/* padding */' | head -n 1301 > "$tmp/t/tests/unit/test_planted.c"
expect_refused "a long test" "tests/unit/test_planted.c: 1301 lines, more than the 1300 a file of tests/unit/"
fresh_copy
yes '/* padding */' | head -n 1301 >> "$tmp/t/cli/cmd_cat.c"
expect_refused "a long file of cli/" "cli/cmd_cat.c: [0-9]* lines, more than the 1300 a file of cli/"
fi

# cli/ may not use common's internal headers.
if section cli_internals; then
fresh_copy
printf '#include "common/endian.h"\n' >> "$tmp/t/cli/cmd_cat.c"
expect_refused "cli using internals" "cli/ and bench/ use only include/trove/"
fi

# The service (net) may not reach up into the program: it calls the input layer itself.
if section net_into_cli; then
fresh_copy
printf '#include "cli.h"\n' >> "$tmp/t/src/net/web_api.c"
expect_refused "net including cli/" "a bare include must name a header in src/net"
fi

# The input layer sits where the graph puts it: above capture and columnar, below net.
if section input_layer; then
fresh_copy
sed -i '0,/#include "input_internal.h"/s//#include "input_internal.h"\n#include "trove\/serve.h"/' \
    "$tmp/t/src/input/import.c"
expect_refused "input including net" "layer input may not include layer net"
fresh_copy
printf '#include "trove/input.h"\n' >> "$tmp/t/src/capture/marker.c"
expect_refused "capture including input" "layer capture may not include layer input"
fi

# A public header that no layer claims.
if section unclaimed_header; then
fresh_copy
printf '#ifndef X\n#define X\n#endif\n' > "$tmp/t/include/trove/orphan.h"
expect_refused "unclaimed public header" "include/trove/orphan.h: belongs to no layer"
fi

# A circle of files: common's error.c calling into codec, which calls common (through
# TROVE_FAIL and by name).
if section circle; then
fresh_copy
printf 'void trove__layers_test_call(void);\nvoid trove__layers_test_call(void) { trove_strerror(trove_wire_format_name(0) ? 0 : 1); }\n' \
    >> "$tmp/t/src/common/error.c"
expect_refused "circle of files" "a circle of files: .*src/common/error.c -> src/codec"
fi

# The same through a macro alone: codec's new file calls common only as TROVE_FAIL(...).
if section circle_macro; then
fresh_copy
printf '#include "common/fail.h"\nint trove__planted(void);\nint trove__planted(void) { return TROVE_FAIL(NULL, TROVE_ERR_INVALID, 0, "planted"); }\n' \
    > "$tmp/t/src/codec/planted.c"
printf 'int trove__planted(void);\nint trove__layers_test_call(void);\nint trove__layers_test_call(void) { return trove__planted(); }\n' \
    >> "$tmp/t/src/common/error.c"
expect_refused "circle through a macro" "a circle of files: .*src/codec/planted.c -> src/common/error.c (trove_diag_set)"
fi

# The compiler alone: with codec's include path, another layer's internal header does not
# exist, while codec's own public and common headers do (so the flags themselves work).
if section compiler; then
inc_flags() { local IFS=:; for d in $1; do printf -- '-I%s\n' "$d"; done; }
mapfile -t codec_flags < <(inc_flags "$codec_inc")
mapfile -t store_flags < <(inc_flags "$store_inc")
printf '#include "trove/event.h"\n#include "common/endian.h"\nint x;\n' > "$tmp/good.c"
check "$cc" -std=c11 -fsyntax-only "${codec_flags[@]}" "$tmp/good.c"
for h in store/dict.h columnar/pq_meta.h capture/capture_internal.h stream/bufpool.h; do
    printf '#include "%s"\nint x;\n' "$h" > "$tmp/bad.c"
    if "$cc" -std=c11 -fsyntax-only "${codec_flags[@]}" "$tmp/bad.c" 2> /dev/null; then
        bad "codec's include path reaches $h"
    else
        ok
    fi
done
for h in columnar/pq_meta.h capture/capture_internal.h codec/wire_internal.h bufpool.h; do
    printf '#include "%s"\nint x;\n' "$h" > "$tmp/bad.c"
    if "$cc" -std=c11 -fsyntax-only "${store_flags[@]}" "$tmp/bad.c" 2> /dev/null; then
        bad "store's include path reaches $h"
    else
        ok
    fi
done
# ... while a file of store's subdirectory (src/store/s3/) finds store's internal header.
printf '#include "backend_internal.h"\nint x;\n' > "$tmp/good.c"
check "$cc" -std=c11 -fsyntax-only "${store_flags[@]}" "$tmp/good.c"
fi

# The build itself fails on a bad tree: configure a copy with an upward include and build
# its layer check (the step every layer library depends on).
if section build; then
if command -v cmake > /dev/null 2>&1; then
    fresh_copy
    mkdir -p "$tmp/t/tests" "$tmp/t/fuzz"
    printf '#include "trove/capture.h"\n' >> "$tmp/t/src/store/name.c"
    if cmake -S "$tmp/t" -B "$tmp/b" > "$tmp/cfg.log" 2>&1; then
        if cmake --build "$tmp/b" --target trove_store > "$tmp/build.log" 2>&1; then
            bad "a build of trove_store with an upward include succeeded"
        else
            check grep -q 'layer store may not include layer capture' "$tmp/build.log"
        fi
    else
        bad "configuring a copy of the tree failed: $(tail -5 "$tmp/cfg.log")"
    fi
fi
fi
finish
