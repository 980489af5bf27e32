#!/bin/sh
# The tests that skipped for want of a tool or a device, and why: what
# each skip appended to target/skipped-tests.txt (cli/tests/common's skip).
# Remove the file before a run to see that run's skips alone.
list="${CARGO_TARGET_DIR:-target}/skipped-tests.txt"
if [ ! -s "$list" ]; then
    echo "no test skipped (no $list)"
    exit 0
fi
echo "$(sort -u "$list" | wc -l) test(s) skipped:"
sort "$list" | uniq -c | sort -rn
