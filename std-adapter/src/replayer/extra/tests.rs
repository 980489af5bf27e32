use reprise_core::record::MemoryClass;

use super::*;

#[test]
fn ranges_become_whole_pages_and_neighbours_share_one() {
    let r = |addr, size| ExtraRange {
        class: MemoryClass::Host,
        addr,
        size,
    };
    let got = spans(&[
        r(0x3000, 10),
        r(0x1010, 0x10),
        r(0x1100, 0x1000),
        r(0x9000, 0x1000),
    ]);
    let got: Vec<_> = got.iter().map(|&(s, e, f)| (s, e, f.addr)).collect();
    assert_eq!(got, [(0x1000, 0x4000, 0x1010), (0x9000, 0xa000, 0x9000)]);
}
