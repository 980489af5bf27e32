#!/bin/sh
# Regenerates backends/cuda/fixtures/*.ptx from the *.cu next to them with
# Debian's clang-19 (apt-get install clang-19); no CUDA SDK needed. The
# generated PTX is committed, so CI needs no clang.
set -eu
cd "$(dirname "$0")/../backends/cuda/fixtures"
CLANG=${CLANG:-clang-19}
for src in *.cu; do
    out=${src%.cu}.ptx
    "$CLANG" -x cuda --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib \
        -O2 -S -o "$out" "$src"
    echo "generated backends/cuda/fixtures/$out"
done
# The demo's and the benchmark's kernel, for every GPU from sm_52 (Maxwell)
# on: the driver compiles PTX for newer GPUs, never for older ones.
"$CLANG" -x cuda --cuda-device-only --cuda-gpu-arch=sm_52 -nocudainc -nocudalib \
    -O2 -S -o saxpy.sm_52.ptx saxpy.cu
echo "generated backends/cuda/fixtures/saxpy.sm_52.ptx"
