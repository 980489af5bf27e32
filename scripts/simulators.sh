#!/usr/bin/env bash
# Builds the simulated CUDA driver and HSA runtime of test-support/ (what
# the tests build for themselves) into target/simulators/, plus a small
# CUDA driver API program linked against the simulated driver, and prints
# the lines that point reprise at them:
#
#     eval "$(scripts/simulators.sh)"
#     cargo run --release -- demo --backend cuda
#
# Everything but the export lines goes to stderr. CC may name the C
# compiler (default cc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/target/simulators"
cc=${CC:-cc}
mkdir -p "$out/cuda" "$out/hsa"

# The CUDA driver: soname libcuda.so.1 as NVIDIA's, and a libcuda.so link
# (the name the executor asks the loader for first, and `-lcuda` links).
# shellcheck disable=SC2086
$cc -O2 -Wall -Werror -shared -fPIC -pthread -Wl,-soname,libcuda.so.1 \
    -o "$out/cuda/libcuda.so.1" "$root"/test-support/src/cuda_driver/*.c -ldl
ln -sf libcuda.so.1 "$out/cuda/libcuda.so"

# The HSA runtime, loaded from the file REPRISE_HSA_LIBRARY names. Its
# chunk-hashing kernel shares blake3_chunks.h with the CUDA simulator.
# shellcheck disable=SC2086
$cc -O2 -Wall -Werror -shared -fPIC -pthread -Wl,-soname,libhsa-runtime64.so.1 \
    -I"$root/test-support/src/cuda_driver" \
    -o "$out/hsa/libhsa-runtime64.so.1" "$root"/test-support/src/hsa_runtime/*.c

# An unmodified CUDA program for `reprise record`: loads the PTX given as
# its first argument, launches saxpy three times, checks the result.
# shellcheck disable=SC2086
$cc -O2 -Wall -Werror -o "$out/saxpy-app" "$root/cli/tests/programs/linked.c" \
    -L"$out/cuda" -lcuda

echo "simulators.sh: built in $out (saxpy-app takes backends/cuda/fixtures/saxpy.ptx)" >&2
printf 'export LD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$out/cuda"
printf 'export REPRISE_HSA_LIBRARY=%q\n' "$out/hsa/libhsa-runtime64.so.1"
