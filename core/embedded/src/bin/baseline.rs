//! The runtime alone (reset, statics, a panic handler): what
//! `scripts/embedded-check.sh` subtracts from `footprint` to give the
//! record path's own flash and RAM, on each target.

#![no_std]
#![no_main]

use panic_halt as _;

#[cfg_attr(target_arch = "arm", cortex_m_rt::entry)]
#[cfg_attr(target_arch = "riscv32", riscv_rt::entry)]
fn main() -> ! {
    loop {
        core::hint::spin_loop();
    }
}
