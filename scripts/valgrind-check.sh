#!/usr/bin/env bash
# Runs the cancellation tests (record and replay futures dropped at every
# await point, on the host executor) under valgrind's memcheck: a copy into
# freed memory, a read of uninitialised memory or a definite leak fails it.
# Needs valgrind (Debian's package). Prints memcheck's summary last.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind-check: valgrind is not installed" >&2; exit 1; }
# The test binary among what cargo built (the reprise binary it runs is
# built too).
bin=$(cargo test --quiet -p reprise-cli --test cancellation --no-run --message-format=json |
    grep '"kind":\["test"\].*"name":"cancellation"' | grep -o '"executable":"[^"]*"' |
    cut -d'"' -f4 | tail -n 1)
[ -x "$bin" ] || { echo "valgrind-check: cargo built no test binary" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
    --show-leak-kinds=definite "$bin" --test-threads=1 >"$log" 2>&1 || status=$?
grep -E '^test |test result' "$log" || true
grep -E '==[0-9]+== (ERROR SUMMARY|   definitely lost|   indirectly lost|   possibly lost)' "$log" |
    sed 's/^==[0-9]*== /valgrind-check: /'
if [ "$status" -ne 0 ]; then
    echo "valgrind-check: failed (exit $status); the whole log:" >&2
    cat "$log" >&2
fi
exit "$status"
