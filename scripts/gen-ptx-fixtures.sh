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
# OpenMP target regions as clang compiles them for a GPU since LLVM 18, with
# the implicit dyn_ptr parameter: device code linked with LLVM's OpenMP
# device runtime into one self-contained PTX, which a driver can load with
# no link step (apt-get install clang-19 llvm-19). The runtime comes from
# Debian's libomp-19-dev, which conflicts with the libomp-16-dev the tests
# use, so it is unpacked rather than installed:
#   (cd /tmp && apt-get download libomp-19-dev && dpkg -x libomp-19-dev_*.deb omp19)
#   DEVICE_RTL=/tmp/omp19/usr/lib/llvm-19/lib/libomptarget-nvptx-sm_80.bc scripts/gen-ptx-fixtures.sh
# clang names each kernel after the source file's device and inode
# (__omp_offloading_<dev>_<inode>_<function>_l<line>), which change from
# checkout to checkout; the ids are renamed fe00_1 so the names stay put.
LLVM_BIN=${LLVM_BIN:-/usr/lib/llvm-19/bin}
DEVICE_RTL=${DEVICE_RTL:-/usr/lib/llvm-19/lib/libomptarget-nvptx-sm_80.bc}
if [ ! -f "$DEVICE_RTL" ]; then
    echo "no OpenMP device runtime at $DEVICE_RTL (see the comment above)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for src in omp_*.c; do
    out=${src%.c}.ptx
    "$CLANG" -fopenmp -fopenmp-targets=nvptx64-nvidia-cuda \
        -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_80 --offload-device-only \
        -nogpulib -O2 -emit-llvm -c -o "$tmp/device.bc" "$src"
    "$LLVM_BIN/llvm-link" --internalize --only-needed "$tmp/device.bc" "$DEVICE_RTL" \
        -o "$tmp/linked.bc"
    "$LLVM_BIN/opt" -O2 "$tmp/linked.bc" -o "$tmp/optimized.bc"
    "$LLVM_BIN/llc" -mtriple=nvptx64-nvidia-cuda -mcpu=sm_80 "$tmp/optimized.bc" \
        -o "$tmp/$out"
    sed -E 's/__omp_offloading_[0-9a-f]+_[0-9a-f]+_/__omp_offloading_fe00_1_/g' \
        "$tmp/$out" > "$out"
    if grep -q '^\.extern \.func' "$out"; then
        echo "$out calls functions it does not define; no driver loads it" >&2
        exit 1
    fi
    echo "generated backends/cuda/fixtures/$out"
done
