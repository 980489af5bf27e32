use super::*;

#[test]
fn versions_from_tool_output() {
    assert_eq!(
        parse_tool_version("Debian clang version 16.0.6 (15~deb12u1)\nTarget: x86_64"),
        Some((16, 0, 6))
    );
    assert_eq!(
        parse_tool_version("Ubuntu LLVM version 19.1.7\n  Optimized build."),
        Some((19, 1, 7))
    );
    assert_eq!(parse_tool_version("no number here"), None);
}

#[test]
fn a_directory_without_clang_is_named() {
    let d = std::env::temp_dir();
    let e = Toolchain::find(Some(&d.join("no-such-llvm"))).unwrap_err();
    assert!(e.to_string().contains("no-such-llvm"), "{e}");
}
