#!/usr/bin/env bash
# Rehearses the GPU check on this machine: runs scripts/gpu-check.sh on the
# binaries staged in .device/ (by scripts/build-gpu-check.sh) with the
# simulated CUDA driver standing in for the real one, so a broken script or
# binary shows up here and not in the GPU machine's limited time. The
# figures it prints are the simulator's, not a GPU's; its kernels run on
# this machine's CPU, so every step gets three times its GPU time limit.
set -euo pipefail
cd "$(dirname "$0")/.."
sim=.device-sim
mkdir -p "$sim"
${CC:-cc} -O2 -Wall -Werror -shared -fPIC -pthread -Wl,-soname,libcuda.so \
    -o "$sim/libcuda.so" test-support/src/cuda_driver/*.c
LD_LIBRARY_PATH="$PWD/$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    OUT="${OUT:-$sim/out}" LIMIT_SCALE=${LIMIT_SCALE:-3} bash scripts/gpu-check.sh "${1:-.device}"
