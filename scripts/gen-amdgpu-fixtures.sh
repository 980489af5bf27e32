#!/bin/sh
# Regenerates the HSA code objects backends/amdgpu/fixtures/saxpy_mixed.*.hsaco
# from saxpy_mixed.hip next to them, and chunk_hash.gfx90a.hsaco from
# chunk_hash.hip (which includes test-support/src/cuda_driver/blake3_chunks.h),
# with clang-19 and lld-19 (Debian:
# apt-get install clang-19 lld-19); no ROCm, HIP headers or device libraries
# needed. The flags are deterministic: the same clang rebuilds the committed
# bytes exactly (backends/amdgpu/tests/fixtures.rs checks it when clang-19 is
# here). The code objects are committed, so CI needs no clang.
#   -x hip --cuda-device-only --no-gpu-bundle-output: device code only, linked
#       by lld into one code object (ELF, EM_AMDGPU) rather than an offload
#       bundle;
#   -nogpuinc -nogpulib: no HIP headers, no device libraries;
#   -fuse-cuid=none -fno-ident: nothing that depends on the checkout or the
#       compiler's build in the output.
set -eu
cd "$(dirname "$0")/../backends/amdgpu/fixtures"
CLANG=${CLANG:-clang-19}
build() { # offload-arch output [flags...]
    arch=$1 out=$2
    shift 2
    "$CLANG" -x hip --cuda-device-only --no-gpu-bundle-output -nogpuinc -nogpulib \
        -fuse-cuid=none -fno-ident -O2 --offload-arch="$arch" "$@" \
        -o "$out" "${src:-saxpy_mixed.hip}"
    chmod 644 "$out"
    echo "generated backends/amdgpu/fixtures/$out"
}
# clang 19's default code object version, v5.
build gfx90a saxpy_mixed.gfx90a.hsaco
build gfx90a saxpy_mixed.gfx90a.v4.hsaco -mcode-object-version=4
# Another processor, for the target mismatch test.
build gfx1030 saxpy_mixed.gfx1030.hsaco
# Explicit target features (target-id syntax, as the HSA runtime names ISAs).
build gfx90a:sramecc-:xnack+ 'saxpy_mixed.gfx90a_sramecc-_xnack+.hsaco'
# The chunk-hashing kernel (issue 25's device-side hashing).
src=chunk_hash.hip build gfx90a chunk_hash.gfx90a.hsaco
