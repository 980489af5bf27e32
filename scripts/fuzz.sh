#!/usr/bin/env bash
# Runs the fuzz targets (cargo fuzz, on the nightly toolchain; install it
# with `cargo install cargo-fuzz`) and keeps what they reach:
#   scripts/fuzz.sh TARGET [SECONDS]   one target (default 60 s)
#   scripts/fuzz.sh all [SECONDS]      every target in turn
# Targets: descriptor, globals, image_kind, host_elf, cuda_image, offload,
# amdgpu_code_object, chunk_manifest, check_protocol.
# The kept corpus of a target is one file, fuzz/corpus/TARGET.pack (each
# input as a little-endian u64 length and its bytes), which
# tests/fuzz_regressions.rs replays on the stable toolchain. A run unpacks
# it into fuzz/work/TARGET/, fuzzes, minimizes (`cargo fuzz cmin`) and packs
# it again. An input that crashes a target lands in fuzz/artifacts/TARGET/:
# fix the reader, then copy the input to fuzz/regressions/TARGET/ so the
# stable test keeps replaying it.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
targets=(descriptor globals image_kind host_elf cuda_image offload amdgpu_code_object chunk_manifest check_protocol)
pack() { # dir file
    python3 - "$1" "$2" <<'PY'
import os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
with open(dst, "wb") as out:
    for name in sorted(os.listdir(src)):
        data = open(os.path.join(src, name), "rb").read()
        out.write(struct.pack("<Q", len(data)) + data)
PY
}
unpack() { # file dir
    python3 - "$1" "$2" <<'PY'
import hashlib, os, struct, sys
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
if os.path.exists(src):
    blob = open(src, "rb").read()
    at = 0
    while at < len(blob):
        (n,) = struct.unpack_from("<Q", blob, at)
        data = blob[at + 8 : at + 8 + n]
        at += 8 + n
        open(os.path.join(dst, hashlib.sha1(data).hexdigest()), "wb").write(data)
PY
}
fuzz_one() { # target seconds
    local t=$1 secs=$2
    rm -rf "work/$t"
    unpack "corpus/$t.pack" "work/$t"
    mkdir -p "regressions/$t"
    cargo +nightly fuzz run "$t" "work/$t" "regressions/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=2048 2>&1 | grep -E '^(#[0-9]+ +(NEW|DONE)|Done|==)' | tail -n 3
    cargo +nightly fuzz cmin "$t" "work/$t" >/dev/null 2>&1
    pack "work/$t" "corpus/$t.pack"
    echo "fuzz: $t: $(ls "work/$t" | wc -l) inputs kept in corpus/$t.pack"
}
case "${1:-}" in
    all) for t in "${targets[@]}"; do fuzz_one "$t" "${2:-60}"; done ;;
    *" "*) echo "usage: $0 TARGET|all [SECONDS]" >&2; exit 2 ;;
    *) if [[ " ${targets[*]} " == *" ${1:-} "* ]]; then fuzz_one "$1" "${2:-60}"; exit; fi
       echo "usage: $0 TARGET|all [SECONDS]  (targets: ${targets[*]})" >&2; exit 2 ;;
esac
