#!/usr/bin/env bash
# export_bench.sh: `trove export --capture` of a large synthetic capture, its peak RSS and
# wall time, for one or two trove binaries side by side in one run (say a build before and
# after a change): a capture of EVENTS events (trove gen, imported into a temp store), then
# for each format ROUNDS exports per binary, alternating, each through /usr/bin/time (peak
# RSS, "%M" KB, and wall time, "%e" s); medians printed, and the outputs compared byte for
# byte. The store is made by the first binary. FORMATS (default: all of them) picks some of
# bundle, bundle-deflate, parquet, chrome-json and perfetto; the trace formats' outputs are
# large (about 100 and 33 bytes an event) and their temporary runs go to $TMPDIR.
# usage: [FORMATS="chrome-json perfetto"] export_bench.sh TROVE [OTHER_TROVE] [EVENTS] [ROUNDS]
set -u
a=$1
b=${2:-}
events=${3:-20M}
rounds=${4:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/export_bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[ -x /usr/bin/time ] || { echo "export_bench: /usr/bin/time is needed (Debian: time)"; exit 1; }

"$a" gen --events "$events" -o "$tmp/g.wire" -q || exit 1
"$a" import "$tmp/g.wire" --name big --store "$tmp/s" -q || exit 1
rm -f "$tmp/g.wire"
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

printf '%-24s %-8s %14s %10s\n' "format" "binary" "peak RSS (MB)" "time (s)"
for label in ${FORMATS:-bundle bundle-deflate parquet chrome-json perfetto}; do
    case $label in
    bundle) opts="" ;;
    bundle-deflate) opts="--zip-deflate" ;;
    parquet | chrome-json | perfetto) opts="--format $label" ;;
    *) echo "export_bench: unknown format $label" >&2; exit 1 ;;
    esac
    bins="a"
    [ -n "$b" ] && bins="a b"
    for x in $bins; do : > "$tmp/rss.$x"; : > "$tmp/t.$x"; done
    for r in $(seq 1 "$rounds"); do
        for x in $bins; do
            bin=$a
            [ "$x" = b ] && bin=$b
            # shellcheck disable=SC2086
            /usr/bin/time -f "%M %e" -o "$tmp/time" "$bin" export --capture big --store "$tmp/s" \
                $opts -o "$tmp/out.$x" -q || echo "export_bench: $bin failed" >&2
            read -r kb s < "$tmp/time"
            echo "$kb" >> "$tmp/rss.$x"
            echo "$s" >> "$tmp/t.$x"
        done
    done
    if [ -n "$b" ] && ! cmp -s "$tmp/out.a" "$tmp/out.b"; then
        echo "export_bench: the two binaries' exports ($opts) differ" >&2
    fi
    rm -f "$tmp/out.a" "$tmp/out.b"
    for x in $bins; do
        printf '%-24s %-8s %14.1f %10s\n' "$label" "$x" \
            "$(median < "$tmp/rss.$x" | awk '{print $1 / 1024}')" "$(median < "$tmp/t.$x")"
    done
done
echo "a: $a${b:+, b: $b}; $events events, median of $rounds runs each"
