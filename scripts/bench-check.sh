#!/usr/bin/env bash
# What `reprise check` costs per capture, in one run: a corpus of N small
# host captures (default 1000; the demo's 64 KiB stencil, recorded once and
# copied under N names) checked with --jobs 1 and --jobs <cores>, against
# `reprise replay --verify` run once per capture (a shell loop, as suites
# did before check). Each with one timed repetition.
#
# The fixed cost per capture is what check spends on a capture beyond the
# replay itself: (check --jobs 1 wall / N) against (the loop's wall / N),
# both including the replay; the ratio is the one that counts (target at
# most 0.2x). Each figure is the best of ROUNDS (default 3) rounds.
#
# Usage: scripts/bench-check.sh [N]   (builds the release binary first;
# REPRISE=path/to/reprise to measure another).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000}
if [ -z "${REPRISE:-}" ]; then
    cargo build --release -q -p reprise-cli
    REPRISE=$PWD/target/release/reprise
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$REPRISE" demo --dir "$work/one" --size 64K --format raw >/dev/null
stem=$(basename "$(ls "$work"/one/*.json)" .json)
mkdir "$work/corpus"
for i in $(seq 1 "$n"); do
    for f in "$work"/one/"$stem".*; do
        cp "$f" "$work/corpus/k$i.${f##*.}"
    done
done
cores=$(nproc)

now() { date +%s.%N; }
# The best of $rounds rounds of "$@" (seconds): on a shared machine the
# shortest is the one least disturbed.
rounds=${ROUNDS:-3}
best() {
    local best="" t0 t1 t
    for _ in $(seq "$rounds"); do
        t0=$(now)
        "$@" >/dev/null
        t1=$(now)
        t=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
        best=$(awk -v a="${best:-$t}" -v b="$t" 'BEGIN { print (b < a) ? b : a }')
    done
    echo "$best"
}
replay_each() {
    for d in "$work"/corpus/*.json; do
        "$REPRISE" replay --verify --repetitions 1 "$d" >/dev/null
    done
}

one=$(best "$REPRISE" check "$work/corpus" --jobs 1 --repetitions 1 --results "$work/r1.jsonl")
many=$(best "$REPRISE" check "$work/corpus" --jobs "$cores" --repetitions 1 --results "$work/rn.jsonl")
loop=$(best replay_each)
passed=$(grep -c '"status":"passed"' "$work/r1.jsonl" || true)
[ "$passed" = "$n" ] || { echo "error: only $passed of $n captures passed" >&2; exit 1; }
awk -v n="$n" -v c="$cores" -v one="$one" -v many="$many" -v loop="$loop" 'BEGIN {
    printf "reprise check over %d small host captures (64 KiB, 1 repetition each)\n", n
    printf "  check --jobs 1:          %8.3f s  %8.1f captures/s  %7.3f ms a capture\n", one, n / one, one / n * 1e3
    printf "  check --jobs %-3d         %8.3f s  %8.1f captures/s\n", c, many, n / many
    printf "  replay --verify per capture: %6.3f s  %8.1f captures/s  %7.3f ms a capture\n", loop, n / loop, loop / n * 1e3
    printf "  per-capture cost, check --jobs 1 / one replay process: %.3fx (target at most 0.2x)\n", one / loop
}'
