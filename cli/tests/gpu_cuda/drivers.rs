//! Replays on a simulated driver changed to behave as others do: no device,
//! no virtual memory management, address hints ignored or kept to its own
//! pool, no stream callbacks or parameter info, no code for the device.

use crate::common::*;
use crate::{record_saxpy, replay_with, simulated};

/// Records a saxpy capture, then replays it on the simulated driver changed
/// by `env`: exit 2, with the capture and each of `needles` (given the
/// recorded base address) in the message.
fn replay_fails_with(env: (&str, &str), needles: impl Fn(u64) -> Vec<String>) {
    let Some(gpu) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    let base = reprise::Capture::open(&capture)
        .unwrap()
        .record
        .region_base
        .unwrap();
    let out = replay_with(&capture, &[env]);
    let mut needles = needles(base);
    needles.push(s(&capture).to_owned());
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    assert_error(&out, &needles);
}

#[test]
fn a_driver_without_devices_is_a_clean_error() {
    replay_fails_with(("REPRISE_SIM_CUDA_DEVICES", "0"), |_| {
        vec!["no CUDA device".into()]
    });
}

#[test]
fn a_driver_without_virtual_memory_management_is_a_clean_error() {
    replay_fails_with(("REPRISE_SIM_CUDA_VMM", "0"), |_| {
        vec!["virtual memory".into()]
    });
}

#[test]
fn a_recorded_address_the_driver_will_not_give_is_named() {
    replay_fails_with(("REPRISE_SIM_CUDA_HINTS", "ignore"), |base| {
        vec![
            format!("{base:#x}"),
            "offered".into(),
            // Not only "in use": this driver ignores hints.
            "some drivers ignore address hints".into(),
        ]
    });
}

#[test]
fn drivers_without_stream_callbacks_or_parameter_info_still_replay() {
    let Some(gpu) = simulated() else { return };
    let dir = tempfile::tempdir().unwrap();
    let capture = record_saxpy(gpu, dir.path());
    for define in ["-DSIM_NO_STREAM_CALLBACK", "-DSIM_NO_PARAM_INFO"] {
        let lib = sim::variant_dir(&[define]).unwrap();
        let out = replay_with(&capture, &[("LD_LIBRARY_PATH", lib.to_str().unwrap())]);
        assert_exit(&out, 0);
        assert!(text(&out).0.contains("verification: PASS"), "{define}");
    }
}

#[test]
fn a_driver_with_its_own_address_pool_replays_in_a_fresh_process() {
    // Driver 580 was seen to place every reservation in its own address
    // pool, honouring hints only inside it: the simulator's `pool` policy.
    let Some(_gpu) = simulated() else { return };
    let pool = [("REPRISE_SIM_CUDA_HINTS", "pool")];
    let dir = tempfile::tempdir().unwrap();
    let out = reprise_env(
        &[
            "demo",
            "--backend",
            "cuda",
            "--size",
            "1M",
            "--dir",
            s(dir.path()),
        ],
        &pool,
    );
    assert_exit(&out, 0);
    let descriptor = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("the demo's capture");
    // LLVM's suggested address is outside the pool: the recording went to
    // the pool's first 2 GiB-aligned address instead ...
    let base = reprise::Capture::open(&descriptor)
        .unwrap()
        .record
        .region_base
        .unwrap();
    assert_eq!(base, 0x3_8000_0000);
    // ... which a fresh process on the same driver gets back.
    let out = replay_with(&descriptor, &pool);
    assert_exit(&out, 0);
    assert!(text(&out).0.contains("verification: PASS"));
}

#[test]
fn an_image_with_no_code_for_the_device_says_what_it_holds() {
    // The saxpy fixture is PTX for sm_80; the simulated device is sm_75.
    replay_fails_with(("REPRISE_SIM_CUDA_CC", "75"), |_| {
        vec![
            "the device is sm_75".into(),
            "PTX sm_80 (ISA 7.0)".into(),
            "CUDA_ERROR_INVALID_PTX".into(),
        ]
    });
}
