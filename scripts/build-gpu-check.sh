#!/usr/bin/env bash
# Builds everything the GPU check needs on this machine (the GPU machine has
# no Rust toolchain) and stages it in .device/ (or in $1): the release
# `reprise` binary and the GPU test binaries. Then run scripts/gpu-check.sh
# there. Binaries are taken from where cargo says it put them, so
# CARGO_TARGET_DIR (or a configured build.target-dir) is honoured.
set -euo pipefail
# Relative paths given by the caller are relative to the caller's directory.
dest=$(realpath -m "${1:-$(dirname "$0")/../.device}")
if [ -n "${CARGO_TARGET_DIR:-}" ]; then
    CARGO_TARGET_DIR=$(realpath -m "$CARGO_TARGET_DIR")
    export CARGO_TARGET_DIR
fi
cd "$(dirname "$0")/.."
mkdir -p "$dest"
# The executable of the artifact of `kind` named `name` in cargo's JSON
# messages on stdin.
executable() { # kind name
    grep "\"kind\":\[\"$1\"\].*\"name\":\"$2\"" | grep -o '"executable":"[^"]*"' |
        tail -n 1 | cut -d'"' -f4
}
stage() { # executable output-name
    if [ -z "$1" ] || [ ! -f "$1" ]; then
        echo "build-gpu-check: cargo reported no executable for $2" >&2
        exit 1
    fi
    cp "$1" "$dest/$2"
    strip --strip-debug "$dest/$2"
}
stage "$(cargo build --release --bin reprise --message-format=json-render-diagnostics | executable bin reprise)" reprise
stage_test() { # package test-name output-name
    stage "$(cargo test --release -p "$1" --test "$2" --no-run --message-format=json-render-diagnostics |
        executable test "$2")" "$3"
}
stage_test reprise-cuda gpu cuda-executor
stage_test reprise-cuda gpu_fault cuda-fault
stage_test reprise-cuda openmp cuda-openmp
stage_test reprise-cli gpu_cuda end-to-end
stage_test reprise-cli llvm_openmp_gpu llvm-openmp
stage_test reprise-cli tune_jit tune-jit
ls -la "$dest"
