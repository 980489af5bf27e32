#!/usr/bin/env bash
# Makes the genuine LLVM 16 captures in cli/tests/fixtures/llvm16/: each
# OpenMP program of cli/tests/openmp/ is compiled with Debian's clang-16 for
# the host offload target and run with LLVM 16's recorder on, which writes
# NAME.json, NAME.memory and NAME.original.output (no image: it is in the
# binary; no globals; no region base). The binary is kept beside its
# captures. Needs clang-16, clang-tools-16 (clang-offload-packager) and
# libomp-16-dev (libomptarget); the plugins are found through
# LD_LIBRARY_PATH, which Debian's libomptarget does not set itself.
set -euo pipefail
cd "$(dirname "$0")/.."
out=cli/tests/fixtures/llvm16
lib=/usr/lib/llvm-16/lib
for p in saxpy two update; do
    rm -rf "${out:?}/$p"
    mkdir -p "$out/$p"
    clang-16 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -O2 "cli/tests/openmp/$p.c" -o "$out/$p/$p"
    (cd "$out/$p" && LD_LIBRARY_PATH="$lib" LIBOMPTARGET_RECORD=1 LIBOMPTARGET_RR_SAVE_OUTPUT=1 \
        LIBOMPTARGET_RR_DEVMEM_SIZE=1 "./$p")
    ls -la "$out/$p"
done
