use super::segments;

#[test]
fn neighbouring_chunks_are_one_copy() {
    let s = segments(&[0, 1, 3, 5, 6], (6 * 10 + 4, 10), 0x1000);
    let got: Vec<(u64, usize, usize)> =
        s.iter().map(|s| (s.device, s.host_offset, s.len)).collect();
    assert_eq!(got, [(0x1000, 0, 20), (0x101e, 30, 10), (0x1032, 50, 14)]);
}
