#!/usr/bin/env bash
# Builds the workspace's documentation with every link working, and fails
# if a page shows a link as literal text.
#
# rustdoc links to another crate's pages only if they exist when it starts
# (it looks for the crate's folder in the output directory), and cargo
# documents a workspace's crates in no particular order: a plain
# `cargo doc --workspace --no-deps` leaves some cross-crate links as text,
# and rustdoc does not warn about them. So the crates are documented here
# one at a time, each after the crates it links to, with warnings as errors
# (unresolved links within a crate are warnings). Then every generated page
# is searched for what an unresolved link renders as: `[<code>Name</code>]`
# or `[Path::to::item]`.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings"
doc=$(cargo metadata --format-version 1 --no-deps | sed 's/.*"target_directory":"\([^"]*\)".*/\1/')/doc
# Fresh pages only: an earlier build's pages of items since removed would
# be searched too.
rm -rf "$doc"/reprise* "$doc"/hsa_sys
# From the core up: each crate after everything it depends on.
for p in reprise-core hsa-sys reprise-host reprise-cuda reprise-amdgpu reprise-capture reprise-std reprise-samples reprise reprise-bench; do
    cargo doc --quiet --no-deps -p "$p"
done
found=$(grep -rnoE '\[<code>[^]<]*</code>\]|\[[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z0-9_]+)+\]' \
    --include='*.html' "$doc"/reprise* "$doc"/hsa_sys 2>/dev/null | sed "s|^$doc/||" | sort -u || true)
if [ -n "$found" ]; then
    echo "doc.sh: links shown as text (unresolved) in the generated pages:" >&2
    echo "$found" >&2
    exit 1
fi
echo "doc.sh: documentation in $doc, every link resolved"
