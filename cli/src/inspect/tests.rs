use super::scalar_text;

#[test]
fn four_bytes_read_as_an_integer_and_a_float() {
    assert_eq!(
        scalar_text(4, 0x4040_0000),
        "4 bytes: 0x40400000 (int 1077936128, float 3)"
    );
    assert_eq!(scalar_text(4, 0xffff_ffff), "4 bytes: 0xffffffff (int -1)");
    assert_eq!(scalar_text(4, 0x400), "4 bytes: 0x400 (int 1024)");
    assert_eq!(scalar_text(4, 0), "4 bytes: 0x0 (int 0)");
    assert_eq!(
        scalar_text(4, 1e-20f32.to_bits().into()),
        "4 bytes: 0x1e3ce508 (int 507307272, float 1e-20)"
    );
    assert_eq!(scalar_text(2, 0x1234), "2 bytes: 0x1234");
    assert_eq!(scalar_text(16, 0), "16 bytes");
}
