#![no_main]

#[allow(dead_code)] // each target uses one of the bodies
#[path = "../targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::check_protocol(data));
