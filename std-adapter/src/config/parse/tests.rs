use super::*;

#[test]
fn sizes() {
    assert_eq!(parse_size("X", "4096").unwrap(), 4096);
    assert_eq!(parse_size("X", "2G").unwrap(), 2 << 30);
    assert_eq!(parse_size("X", "3 KiB").unwrap(), 3072);
    assert!(parse_size("X", "G").is_err());
}

#[test]
fn globs() {
    assert!(glob_match("*saxpy*", "__omp_offloading_saxpy_l12"));
    assert!(glob_match("k?", "k1"));
    assert!(!glob_match("k?", "k12"));
    assert!(glob_match("*", ""));
    assert!(!glob_match("abc", "abd"));
    assert!(glob_match("a*b*c", "axxbyyc"));
    assert!(!glob_match("a*b*c", "axxbyy"));
}
