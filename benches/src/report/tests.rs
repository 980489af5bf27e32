use super::*;
use crate::interposer::Outcome;

#[test]
fn bytes_take_the_largest_unit_they_fill() {
    assert_eq!(bytes(0), "0 B");
    assert_eq!(bytes(1023), "1023 B");
    assert_eq!(bytes(1024), "1.0 KiB");
    assert_eq!(bytes(3 << 19), "1.5 MiB");
    assert_eq!(bytes(5 << 40), "5.0 TiB");
}

#[test]
fn times_take_a_unit_that_suits_them() {
    assert_eq!(ms(2.5), "2.50 s");
    assert_eq!(ms(0.0125), "12.50 ms");
    assert_eq!(ms(0.000_012_5), "12.5 us");
}

#[test]
fn an_interposer_that_was_not_measured_says_why_in_one_line() {
    let t = interposer::table(&Outcome::Skipped("no interposer here".into()));
    assert_eq!(
        t.trim(),
        "interposer (per launch, same run): skipped: no interposer here"
    );
    let j = interposer::to_json(&Outcome::Failed("it crashed".into()));
    assert_eq!(j["error"], "it crashed");
}
