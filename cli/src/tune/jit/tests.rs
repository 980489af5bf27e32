use super::*;

#[test]
fn lists_cross_over_the_fixed_options() {
    let a = JitArgs {
        max_registers: Some(lists::ValueList(vec![16, 32])),
        jit_opt_level: opt_levels("0,4").ok(),
        jit_option: vec![(JitOption::CacheMode, 2)],
    };
    let s: Vec<String> = a.settings().iter().map(ToString::to_string).collect();
    assert_eq!(
        s,
        [
            "CACHE_MODE=2,MAX_REGISTERS=16,OPTIMIZATION_LEVEL=0",
            "CACHE_MODE=2,MAX_REGISTERS=16,OPTIMIZATION_LEVEL=4",
            "CACHE_MODE=2,MAX_REGISTERS=32,OPTIMIZATION_LEVEL=0",
            "CACHE_MODE=2,MAX_REGISTERS=32,OPTIMIZATION_LEVEL=4",
        ]
    );
    assert!(a.single().is_err());
    assert_eq!(opt_levels("1..3").unwrap().0, vec![1, 2, 3]);
    assert!(opt_levels("5").is_err());
    assert!(setting("OPTIMIZATION_LEVEL=7").is_err());
    assert!(JitArgs::default().settings().is_empty());
}

#[test]
fn only_the_cuda_executor_takes_jit_options() {
    let refusal = |k| reprise::executors::capabilities(k).jit_refusal;
    assert_eq!(refusal(BackendKind::Cuda), None);
    assert!(refusal(BackendKind::Host).is_some_and(|w| w.contains("native code")));
    assert!(refusal(BackendKind::Amdgpu).is_some_and(|w| w.contains("code objects")));
    let amd = check(std::path::Path::new("c.json"), BackendKind::Amdgpu, None)
        .unwrap_err()
        .to_string();
    assert!(amd.starts_with("c.json: JIT options"), "{amd}");
}
