use super::*;

#[test]
fn each_limit_names_its_value_and_its_option() {
    let d = CompileLimits::default();
    assert_eq!(
        Limit::Time(d.time).to_string(),
        "ran past the compile time limit of 120 s (--compile-timeout)"
    );
    assert_eq!(
        Limit::Memory(d.memory).to_string(),
        "ran out of memory under the compile memory limit of 4 GiB (--compile-memory)"
    );
    assert_eq!(
        Limit::Output(d.output).to_string(),
        "tried to write a file larger than the compile output limit of 1 GiB \
         (--compile-output)"
    );
    assert!(Limit::Output(1000).to_string().contains("1000 bytes"));
    assert!(
        Limit::Time(Duration::from_millis(1500))
            .to_string()
            .contains("1.500 s")
    );
}
