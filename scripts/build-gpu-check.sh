#!/usr/bin/env bash
# Builds everything the GPU check needs on this machine (the GPU machine has
# no Rust toolchain) and stages it in .device/: the release `reprise` binary
# and the GPU test binaries. Then run scripts/gpu-check.sh there.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .device
cargo build --release --bin reprise
cp target/release/reprise .device/reprise
strip --strip-debug .device/reprise
stage() { # package test-name output-name
    local exe
    exe=$(cargo test --release -p "$1" --test "$2" --no-run --message-format=json 2>/dev/null |
        grep "\"kind\":\[\"test\"\].*\"name\":\"$2\"" | grep -o '"executable":"[^"]*"' | tail -n 1 | cut -d'"' -f4)
    cp "$exe" ".device/$3"
    strip --strip-debug ".device/$3"
}
stage reprise-cuda gpu cuda-executor
stage reprise-cuda gpu_fault cuda-fault
stage reprise gpu_cuda end-to-end
ls -la .device
