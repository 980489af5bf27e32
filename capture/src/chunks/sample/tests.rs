use super::worth_compressing;

fn noise(n: usize) -> Vec<u8> {
    super::super::tests::noise(n, 0x9E37_79B9_7F4A_7C15)
}

/// A smooth float field with full mantissas, as `reprise bench
/// --store` writes (its chunks save ~11.5% whole, ~16% in 16 KiB
/// pieces); with `keep_bits` of each mantissa's 23 kept, the rest zero.
fn floats(n: usize, keep_bits: u32) -> Vec<u8> {
    let mask = !((1u32 << (23 - keep_bits)) - 1);
    (0..n / 4)
        .flat_map(|i| {
            let x = i as f64 * 1e-4 + 73.1;
            let f = (x.sin() * 3.7 + (x * 0.37).cos() * 0.01) as f32;
            (f.to_bits() & mask).to_le_bytes()
        })
        .collect()
}

fn saves_an_eighth_whole(c: &mut zstd::bulk::Compressor<'static>, data: &[u8]) -> bool {
    let n = c.compress(data).unwrap().len();
    data.len() - n.min(data.len()) >= data.len() / crate::chunks::layout::KEEP_COMPRESSED_BELOW
}

#[test]
fn samples_decide_whether_a_chunk_is_compressed_whole() {
    let mut c = zstd::bulk::Compressor::new(1).unwrap();
    let mut out = Vec::new();
    let mut decide = |data: &[u8]| worth_compressing(&mut c, data, &mut out).unwrap();
    // Noise throughout: kept raw, never compressed whole.
    assert!(!decide(&noise(2 << 20)));
    // Zeros compress.
    assert!(decide(&vec![0; 2 << 20]));
    // Noise with a zero middle: the middle sample finds it.
    let mut mixed = noise(2 << 20);
    mixed[768 << 10..1280 << 10].fill(0);
    assert!(decide(&mixed));
    // Noise behind a zero start, and before a zero end.
    let mut head = noise(2 << 20);
    head[..32 << 10].fill(0);
    assert!(decide(&head));
    let mut tail = noise(2 << 20);
    tail[(2 << 20) - (32 << 10)..].fill(0);
    assert!(decide(&tail));
    // A chunk shorter than its samples is always compressed whole.
    assert!(decide(&noise(128 << 10)));
}

#[test]
fn samples_of_floats_say_what_compressing_them_whole_would() {
    let mut c = zstd::bulk::Compressor::new(1).unwrap();
    let mut out = Vec::new();
    // Full mantissas: 16 KiB pieces of them save more than an eighth,
    // the whole chunk less; it is not compressed (it would be kept
    // raw after compressing it whole).
    let full = floats(2 << 20, 23);
    assert!(!saves_an_eighth_whole(&mut c, &full));
    assert!(!worth_compressing(&mut c, &full, &mut out).unwrap());
    // Twelve mantissa bits: the whole saves far more than an eighth,
    // and it is compressed.
    let short = floats(2 << 20, 12);
    assert!(saves_an_eighth_whole(&mut c, &short));
    assert!(worth_compressing(&mut c, &short, &mut out).unwrap());
}
