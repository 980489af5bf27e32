#[test]
fn work_is_done_once_on_a_thread() {
    let n = std::sync::atomic::AtomicUsize::new(0);
    let r = std::thread::scope(|s| {
        super::spawn_or_run(s, || {
            n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 41
        })
        .join()
        .ok()
    });
    assert_eq!(r, Some(41));
    assert_eq!(n.into_inner(), 1);
}
