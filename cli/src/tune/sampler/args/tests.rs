use super::*;

#[test]
fn bad_values_say_what_is_wrong() {
    assert!(trials("0").unwrap_err().contains("at least 1"));
    assert!(trials("x").unwrap_err().contains("not a number"));
    assert_eq!(trials("12").unwrap(), 12);
    assert_eq!(workers("auto").unwrap(), Workers::Auto);
    assert_eq!(workers("3").unwrap(), Workers::Count(3));
    assert!(workers("0").unwrap_err().contains("at least 1"));
    assert_eq!(budget("30s").unwrap(), Duration::from_secs(30));
    assert_eq!(budget("5m").unwrap(), Duration::from_secs(300));
    assert_eq!(budget("1h").unwrap(), Duration::from_secs(3600));
    assert_eq!(budget("250ms").unwrap(), Duration::from_millis(250));
    assert_eq!(budget("2.5").unwrap(), Duration::from_millis(2500));
    assert!(budget("0s").unwrap_err().contains("more than 0"));
    assert!(budget("5 parsecs").unwrap_err().contains("not a duration"));
    assert!(budget("").unwrap_err().contains("not a duration"));
}
