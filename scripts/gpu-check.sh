#!/usr/bin/env bash
# The GPU check, run on a machine with an NVIDIA GPU from the binaries that
# scripts/build-gpu-check.sh staged in .device/ (or in $1):
#   1. the CUDA executor's device tests (regions, images, globals, launches,
#      record/replay schedules, synchronize counts, a faulting kernel);
#   2. clang's OpenMP kernels (PTX linked with LLVM's device runtime): their
#      thread limit, a reduction through the launch environment;
#   3. the end-to-end suite: record through the library -> files ->
#      `reprise replay --verify` in a second process, geometry overrides,
#      native parameter sizes, a 2-D grid, many launches; LLVM 18 captures
#      of the OpenMP kernels;
#   4. `reprise bench --backend cuda --quick --json`: sync vs async recording,
#      and async with device-side staging (small sizes, then 256 MiB on its
#      own); its repetition row is the device-to-device restore;
#   5. `reprise tune` of the demo's saxpy capture (16 MiB) over 24 grid and
#      block configurations, with CSV and SVG;
#   6. a sweep of PTX JIT options: the register-heavy fixture kernel
#      (reg_heavy.ptx) recorded, then `reprise tune --max-registers
#      16,32,64,255` on it (the tune-jit test of that sweep, which prints the registers
#      and spills this GPU's JIT reports, and the table).
# scripts/rehearse-gpu-check.sh runs this script here first, on the
# simulated driver. Every step has its own time limit (600 s in all at
# worst, so one call of at most 600 s holds the whole check); the script
# goes on after a failure (LIMIT_SCALE=N multiplies every limit: the
# rehearsal's simulated driver runs kernels on the CPU) and exits non-zero if any step failed. Logs go to $OUT (or ./gpu-check-out).
set -u
B=${1:-.device}
OUT=${OUT:-gpu-check-out}
mkdir -p "$OUT"
export REPRISE_GPU_TESTS=1 REPRISE_BIN="$B/reprise" RUST_BACKTRACE=1
failed=0
step() { # name limit command...
    local name=$1 limit=$2
    shift 2
    echo "=== $name"
    local t0=$SECONDS
    timeout "$((limit * ${LIMIT_SCALE:-1}))" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 40 "$OUT/$name.log"
    echo "=== $name: exit $rc after $((SECONDS - t0)) s"
    [ "$rc" -eq 0 ] || failed=1
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
step cuda-executor 90 "$B/cuda-executor" --test-threads=1 --nocapture
step cuda-fault 45 "$B/cuda-fault" --nocapture
step cuda-openmp 30 "$B/cuda-openmp" --test-threads=1 --nocapture
step end-to-end 120 "$B/end-to-end" --test-threads=1 --nocapture
step llvm-openmp 45 "$B/llvm-openmp" --test-threads=1 --nocapture
step bench-cuda 90 "$B/reprise" bench --backend cuda --quick --json --sizes 64K,1M,16M
step bench-cuda-256m 120 "$B/reprise" bench --backend cuda --quick --json --sizes 256M
tune_saxpy() {
    "$B/reprise" demo --backend cuda --size 16M --dir "$OUT/tune-demo" || return
    local capture
    capture=$(ls "$OUT"/tune-demo/*.json | grep -v "\.report\.json$" | head -n 1)
    "$B/reprise" tune "$capture" --num-teams 64..8192 --num-threads 64..1024 \
        --repetitions 10 --csv "$OUT/tune-saxpy.csv" --plot "$OUT/tune-saxpy.svg"
}
export B OUT
step cuda-tune 45 bash -c "$(declare -f tune_saxpy); tune_saxpy"
step cuda-jit-sweep 15 "$B/tune-jit" --test-threads=1 --nocapture a_max_registers_sweep
exit $failed
