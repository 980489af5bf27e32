use super::*;

#[test]
fn the_visible_devices_are_the_longest_list() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |v: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == v)
                .map(|(_, x)| x.to_string())
        }
    };
    assert_eq!(visible_devices_in(env(&[])), 1);
    assert_eq!(
        visible_devices_in(env(&[("CUDA_VISIBLE_DEVICES", "0,1,2")])),
        3
    );
    assert_eq!(
        visible_devices_in(env(&[
            ("CUDA_VISIBLE_DEVICES", "3"),
            ("ROCR_VISIBLE_DEVICES", "0,1")
        ])),
        2
    );
    // None visible: one worker still, whose replays say so.
    assert_eq!(visible_devices_in(env(&[("CUDA_VISIBLE_DEVICES", "")])), 1);
}

#[test]
fn timeouts_and_factors() {
    assert_eq!(seconds("2"), Ok(Duration::from_secs(2)));
    assert_eq!(seconds("0"), Ok(Duration::ZERO));
    assert_eq!(seconds("0.5"), Ok(Duration::from_millis(500)));
    assert!(seconds("-1").is_err() && seconds("inf").is_err() && seconds("x").is_err());
    assert_eq!(factor("1.2"), Ok(1.2));
    assert!(factor("0.9").is_err() && factor("nan").is_err());
}
