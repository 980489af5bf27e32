//! PTX loaded with JIT options on the simulated CUDA driver (or a real GPU
//! with `REPRISE_GPU_TESTS=1`): the driver receives the options given,
//! reports registers and spills under a register limit, and a failed JIT
//! keeps its log; cubins refuse JIT options.

mod common;

use common::*;
use reprise_core::exec::Executor;
use reprise_cuda::{CompiledKernels, CudaError, CudaOptions, JitOption, JitOptions};

fn simulated() -> bool {
    sim::driver() == Ok(sim::Driver::Simulated)
}

#[test]
fn jit_options_reach_the_driver_and_registers_follow_the_limit() {
    let Some((_guard, exec)) = gpu() else {
        return;
    };
    let record = std::env::temp_dir().join(format!("reprise-jit-record-{}", std::process::id()));
    let _ = std::fs::remove_file(&record);
    // SAFETY: the simulator reads the variable at each call; this test
    // holds the device lock, and no other thread of it reads the environment.
    unsafe { std::env::set_var("REPRISE_SIM_CUDA_JIT_RECORD", &record) };
    let ptx = fixture("saxpy.ptx");
    let mut regs = Vec::new();
    for limit in [16, 32, 64, 255] {
        let report = CompiledKernels::new();
        let exec = exec.clone().with_options(
            CudaOptions::new()
                .jit(
                    JitOptions::new()
                        .set(JitOption::MaxRegisters, limit)
                        .set(JitOption::OptimizationLevel, 3),
                )
                .report_compiled(report.clone()),
        );
        let image = exec.load_image(&ptx).unwrap();
        let kernel = exec.kernel(&image, "saxpy").unwrap();
        let compiled = kernel.compiled().expect("loaded with options").clone();
        // The same, reported to whoever opened the executor.
        assert_eq!(report.take(), vec![("saxpy".to_string(), compiled.clone())]);
        assert_eq!(
            compiled.options.to_string(),
            format!("MAX_REGISTERS={limit},OPTIMIZATION_LEVEL=3")
        );
        regs.push((compiled.registers, compiled.spills));
    }
    // SAFETY: as above.
    unsafe { std::env::remove_var("REPRISE_SIM_CUDA_JIT_RECORD") };
    if !simulated() {
        println!("registers and spills on this GPU: {regs:?}");
        return;
    }
    // saxpy.ptx declares 7 b32, 7 f32 and 9 b64 registers: 32 by the
    // simulator's rule; 4 bytes spilled a register short.
    assert_eq!(
        regs,
        vec![
            (Some(16), Some((64, 64))),
            (Some(32), Some((0, 0))),
            (Some(32), Some((0, 0))),
            (Some(32), Some((0, 0)))
        ]
    );
    let lines = std::fs::read_to_string(&record).unwrap();
    let _ = std::fs::remove_file(&record);
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    // MAX_REGISTERS (0), OPTIMIZATION_LEVEL (7), then the logs (3-6) and
    // LOG_VERBOSE (12).
    assert_eq!(
        lines[0],
        "cuModuleLoadDataEx 0=16 7=3 3=buf 4=65536 5=buf 6=65536 12=1"
    );
}

#[test]
fn a_failed_jit_keeps_its_log_and_cubins_refuse_options() {
    let Some((_guard, exec)) = gpu() else {
        return;
    };
    let jitted = exec
        .clone()
        .with_jit_options(JitOptions::new().set(JitOption::OptimizationLevel, 9));
    let e = jitted.load_image(&fixture("saxpy.ptx")).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, CudaError::JitFailed { .. }), "{text}");
    assert!(text.contains("OPTIMIZATION_LEVEL=9"), "{text}");
    if simulated() {
        assert!(text.contains("JIT log:\nptxas fatal"), "{text}");
        assert!(text.contains("CUDA_ERROR_INVALID_VALUE"), "{text}");
    }
    let jitted = exec
        .clone()
        .with_jit_options(JitOptions::new().set(JitOption::MaxRegisters, 32));
    let e = jitted
        .load_image(&fixture("saxpy.sm_90.cubin"))
        .unwrap_err();
    assert!(matches!(e, CudaError::JitOptionsNeedPtx(_)), "{e}");
    assert!(e.to_string().contains("a cubin is compiled already"), "{e}");
    // Without options, PTX loads as before.
    let image = exec.load_image(&fixture("saxpy.ptx")).unwrap();
    assert!(image.jit().is_none());
}
