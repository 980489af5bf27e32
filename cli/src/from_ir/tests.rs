use super::*;

#[derive(clap::Parser)]
struct Cli {
    #[command(flatten)]
    limits: LimitArgs,
}

#[test]
fn the_limits_default_to_the_librarys_and_parse_sizes() {
    let parsed = <Cli as clap::Parser>::parse_from(["t"]).limits;
    assert_eq!(parsed, LimitArgs::default());
    assert_eq!(parsed.limits(), CompileLimits::default());
    let given = <Cli as clap::Parser>::parse_from([
        "t",
        "--compile-timeout",
        "5",
        "--compile-memory",
        "512M",
        "--compile-output",
        "64K",
    ])
    .limits
    .limits();
    assert_eq!(given.time, Duration::from_secs(5));
    assert_eq!(given.memory, 512 << 20);
    assert_eq!(given.output, 64 << 10);
    for bad in [
        ["--compile-timeout", "0"],
        ["--compile-timeout", "1.5"],
        ["--compile-memory", "0"],
        ["--compile-output", "lots"],
    ] {
        assert!(
            <Cli as clap::Parser>::try_parse_from(["t", bad[0], bad[1]]).is_err(),
            "{bad:?}"
        );
    }
}
