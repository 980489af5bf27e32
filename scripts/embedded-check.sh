#!/usr/bin/env bash
# The core on constrained targets:
# - builds reprise-core, with and without `alloc`, for a bare-metal x86-64,
#   a Cortex-M4F and a 32-bit RISC-V microcontroller;
# - links core/embedded's binaries (its own Cargo.lock, --locked) and
#   measures the record path's flash and static RAM (`footprint` less
#   `baseline`, the runtime alone) with and without `alloc`, on the
#   Cortex-M4F and on RISC-V;
# - when qemu-system-arm is installed (Debian's package), runs them on QEMU's
#   Cortex-M4 machine (netduinoplus2) with -icount shift=0, so that TIM2
#   counts instructions: `decode`, then `record` (a launch recorded under the
#   interrupt-driven executor, by the core's block_on and by embassy, async
#   and Sync, then its capture replayed on the device) with and without
#   `alloc`, failing on any wrong value; checks
#   that `record` built with the spin-lock 64-bit atomics hangs when an
#   interrupt lands mid-update (what the default build's interrupt-safe
#   atomics prevent); and reads the capture `record` wrote over semihosting
#   with `reprise inspect` (it must exit 0), comparing its snapshots and
#   globals byte for byte with what the microcontroller reported.
# The targets are installed with `rustup target add`; `reprise` is built
# (cargo build -p reprise-cli) unless REPRISE_BIN names one.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
targets=(x86_64-unknown-none thumbv7em-none-eabihf riscv32imac-unknown-none-elf)
rustup target add "${targets[@]}" >/dev/null
for t in "${targets[@]}"; do
    cargo build --quiet -p reprise-core --target "$t"
    cargo build --quiet -p reprise-core --target "$t" --features alloc
    echo "embedded-check: reprise-core builds for $t (with and without alloc)"
done

fail() {
    echo "embedded-check: FAILED: $*" >&2
    exit 1
}

embedded() {
    (cd core/embedded && cargo build --quiet --release --locked "$@")
}

# Flash: what is loaded from it (vector table, code, constants, initial
# data); RAM: statics (initial data and zeroed), not the stack.
sizes() {
    local flash=0 ram=0 name size
    while read -r name size; do
        case $name in
            .vector_table | .text | .kernel | .rodata) flash=$((flash + 16#$size)) ;;
            .data) flash=$((flash + 16#$size)) ram=$((ram + 16#$size)) ;;
            .bss | .uninit | .sbss | .sdata) ram=$((ram + 16#$size)) ;;
        esac
    done < <(readelf -S -W "$1" | sed -n 's/^ *\[ *[0-9]*\] *\([^ ]*\) *[A-Z]* *[0-9a-f]* *[0-9a-f]* *\([0-9a-f]*\).*/\1 \2/p')
    echo "$flash $ram"
}

out=core/embedded/target
echo "embedded-check: the record path's flash and static RAM (footprint less baseline, bytes):"
printf '  %-30s %8s %8s %12s %10s\n' target alloc flash "static RAM" "(total)"
for t in thumbv7em-none-eabihf riscv32imac-unknown-none-elf; do
    embedded --target "$t" --bin baseline
    read -r bflash bram < <(sizes "$out/$t/release/baseline")
    for alloc in no yes; do
        features=()
        [[ $alloc == yes ]] && features=(--features alloc)
        embedded --target "$t" --bin footprint "${features[@]}"
        read -r flash ram < <(sizes "$out/$t/release/footprint")
        printf '  %-30s %8s %8d %12d %10s\n' "$t" "$alloc" $((flash - bflash)) $((ram - bram)) "$flash/$ram"
    done
done

if ! command -v qemu-system-arm >/dev/null; then
    embedded --target thumbv7em-none-eabihf
    embedded --target thumbv7em-none-eabihf --features alloc
    echo "embedded-check: qemu-system-arm is not installed; core/embedded was linked, not run"
    exit 0
fi

qemu=(qemu-system-arm -machine netduinoplus2 -nographic -icount shift=0
    -semihosting-config enable=on,target=native -kernel)
elf=$root/$out/thumbv7em-none-eabihf/release

embedded --target thumbv7em-none-eabihf
timeout 60 "${qemu[@]}" "$elf/decode" || fail "decode reported a wrong value"
echo "embedded-check: decode ran on QEMU's Cortex-M4 (netduinoplus2)"

reprise=${REPRISE_BIN:-}
if [[ -z $reprise ]]; then
    cargo build --quiet -p reprise-cli
    reprise=$root/target/debug/reprise
fi

# The hex of a file's bytes, on one line.
hexof() {
    od -An -v -tx1 "$1" | tr -d ' \n'
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for alloc in no yes; do
    features=()
    [[ $alloc == yes ]] && features=(--features alloc)
    embedded --target thumbv7em-none-eabihf --bin record "${features[@]}"
    dir=$work/alloc-$alloc
    mkdir "$dir"
    # QEMU's semihosting writes the capture into its working directory.
    (cd "$dir" && timeout 60 "${qemu[@]}" "$elf/record" >report) ||
        { cat "$dir/report"; fail "record (alloc: $alloc) reported a wrong value"; }
    grep -v '^reported ' "$dir/report" | sed "s/^/  [alloc: $alloc] /"
    reported() {
        sed -n "s/^reported $1 //p" "$dir/report"
    }
    cap=$dir/scale
    [[ $(hexof "$cap.record_input") == "$(reported input)" ]] ||
        fail "the input snapshot on the host is not what the microcontroller reported"
    [[ $(hexof "$cap.record_output") == "$(reported output)" ]] ||
        fail "the output snapshot on the host is not what the microcontroller reported"
    # The globals file in reprise's layout (u32 count; per global u32 name
    # length, u64 size, the name and its NUL, the bytes) holding the values
    # reported: factor (4 bytes) then calls (8).
    g=$(reported globals)
    want=02000000
    want+=070000000400000000000000$(printf 'factor\0' | od -An -v -tx1 | tr -d ' \n')${g:0:8}
    want+=060000000800000000000000$(printf 'calls\0' | od -An -v -tx1 | tr -d ' \n')${g:8:16}
    [[ ${#g} == 24 && $(hexof "$cap.globals") == "$want" ]] ||
        fail "the globals file on the host is not what the microcontroller reported"
    # The image: an Arm ELF relocatable object whose one function is the
    # kernel.
    readelf -h -s "$cap.image" >"$dir/readelf" ||
        fail "the capture's image is not an ELF file readelf reads"
    grep -Eq 'Machine: +ARM' "$dir/readelf" && grep -Eq 'FUNC +GLOBAL +DEFAULT +1 scale$' "$dir/readelf" ||
        { cat "$dir/readelf"; fail "the capture's image is not the kernel's Arm code"; }
    "$reprise" inspect "$cap.json" >"$dir/inspect" ||
        { cat "$dir/inspect"; fail "reprise inspect rejected the microcontroller's capture"; }
    for line in 'executor  mcu' 'which no executor on this machine runs' 'status    complete' \
        'factor (4 bytes)' 'calls (8 bytes)'; do
        grep -qF "$line" "$dir/inspect" ||
            { cat "$dir/inspect"; fail "reprise inspect did not say \"$line\""; }
    done
    [[ $(grep -c 'checksum ok' "$dir/inspect") == 4 ]] ||
        { cat "$dir/inspect"; fail "reprise inspect did not verify the four files' checksums"; }
    if "$reprise" replay "$cap.json" >"$dir/replay" 2>&1; then
        fail "reprise replayed a microcontroller's capture on this machine"
    fi
    echo "embedded-check: [alloc: $alloc] reprise inspect read the capture (exit 0); its snapshots and globals are the microcontroller's, byte for byte; replay refuses it"
done

# The spin lock under the 64-bit atomics (portable-atomic's default
# fallback on a target with 32-bit atomics): SysTick's handler spins
# forever on the lock that thread mode holds. The default build masks
# interrupts instead, and passes above.
embedded --target thumbv7em-none-eabihf --bin record --no-default-features
set +e
(cd "$work" && timeout 10 "${qemu[@]}" "$elf/record" >spin 2>&1)
rc=$?
set -e
[[ $rc == 124 ]] && ! grep -q 'no update lost' "$work/spin" ||
    fail "record with spin-lock atomics did not hang on an interrupt landing mid-update (exit $rc)"
echo "embedded-check: with spin-lock 64-bit atomics, an interrupt landing mid-update hangs (as expected)"
