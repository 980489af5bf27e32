#!/usr/bin/env bash
# The core on constrained targets: builds reprise-core, with and without
# `alloc`, for a bare-metal x86-64, a Cortex-M4F and a 32-bit RISC-V
# microcontroller; links core/embedded (a no_std binary with no allocator
# that decodes a kernel record and its globals) for the Cortex-M4F and
# reports its flash and RAM; and runs it on QEMU's Cortex-M4 machine when
# qemu-system-arm is installed (Debian's package), failing if it reports a
# wrong value. The targets are installed with `rustup target add`.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(x86_64-unknown-none thumbv7em-none-eabihf riscv32imac-unknown-none-elf)
rustup target add "${targets[@]}" >/dev/null
for t in "${targets[@]}"; do
    cargo build --quiet -p reprise-core --target "$t"
    cargo build --quiet -p reprise-core --target "$t" --features alloc
    echo "embedded-check: reprise-core builds for $t (with and without alloc)"
done
(cd core/embedded && cargo build --quiet --release --locked --target thumbv7em-none-eabihf)
elf=core/embedded/target/thumbv7em-none-eabihf/release/reprise-core-embedded
# Flash: what is loaded from it (vector table, code, constants, initial
# data); RAM: statics (initial data and zeroed), before the stack.
flash=0 ram=0
while read -r name size; do
    case $name in
        .vector_table | .text | .rodata) flash=$((flash + 16#$size)) ;;
        .data) flash=$((flash + 16#$size)) ram=$((ram + 16#$size)) ;;
        .bss | .uninit) ram=$((ram + 16#$size)) ;;
    esac
done < <(readelf -S -W "$elf" | sed -n 's/^ *\[ *[0-9]*\] *\([^ ]*\) *[A-Z]* *[0-9a-f]* *[0-9a-f]* *\([0-9a-f]*\).*/\1 \2/p')
echo "embedded-check: core/embedded for thumbv7em-none-eabihf: $flash bytes of flash, $ram bytes of static RAM"
if command -v qemu-system-arm >/dev/null; then
    timeout 60 qemu-system-arm -machine netduinoplus2 -nographic \
        -semihosting-config enable=on,target=native -kernel "$elf"
    echo "embedded-check: ran on QEMU's Cortex-M4 (netduinoplus2)"
else
    echo "embedded-check: qemu-system-arm is not installed; core/embedded was linked, not run"
fi
