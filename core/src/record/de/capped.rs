//! JSON values kept within fixed capacities: strings, arrays and hex
//! strings read into `heapless` buffers, with their true lengths, so a
//! descriptor's checks can refuse what does not fit instead of the parser
//! failing without a word.

use core::fmt;

use heapless::{String, Vec};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A JSON string kept up to `N` bytes, with its true length.
#[derive(Default)]
pub(super) struct CappedStr<const N: usize> {
    pub(super) s: String<N>,
    pub(super) len: usize,
}

impl<'de, const N: usize> Deserialize<'de> for CappedStr<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const N: usize>;
        impl<const N: usize> Visitor<'_> for V<N> {
            type Value = CappedStr<N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let mut s = String::new();
                let _ = s.push_str(v);
                Ok(CappedStr { s, len: v.len() })
            }
        }
        d.deserialize_str(V::<N>)
    }
}

/// A JSON array kept up to `N` elements, with its true length.
pub(super) struct CappedVec<T, const N: usize> {
    pub(super) v: Vec<T, N>,
    pub(super) len: u64,
}

impl<T, const N: usize> Default for CappedVec<T, N> {
    fn default() -> Self {
        CappedVec {
            v: Vec::new(),
            len: 0,
        }
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for CappedVec<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T, const N: usize>(core::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for V<T, N> {
            type Value = CappedVec<T, N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = CappedVec::default();
                while let Some(x) = seq.next_element::<T>()? {
                    let _ = out.v.push(x);
                    out.len += 1;
                }
                Ok(out)
            }
        }
        d.deserialize_seq(V::<T, N>(core::marker::PhantomData))
    }
}

/// A JSON string of hex digits, decoded into at most `N` bytes.
#[derive(Default)]
pub(super) struct HexBytes<const N: usize> {
    pub(super) v: Vec<u8, N>,
    pub(super) len: usize,
    pub(super) bad: bool,
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl<'de, const N: usize> Deserialize<'de> for HexBytes<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const N: usize>;
        impl<const N: usize> Visitor<'_> for V<N> {
            type Value = HexBytes<N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a hex string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                let mut out = HexBytes::<N>::default();
                let b = s.as_bytes();
                out.bad = !b.len().is_multiple_of(2);
                out.len = b.len() / 2;
                for pair in b.chunks_exact(2) {
                    match (hex_val(pair[0]), hex_val(pair[1])) {
                        (Some(h), Some(l)) => {
                            let _ = out.v.push(h << 4 | l);
                        }
                        _ => out.bad = true,
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_str(V::<N>)
    }
}

/// The 8 bytes of `h` as a big-endian number, when it holds exactly 8.
pub(super) fn hex_u64(h: &HexBytes<8>) -> Option<u64> {
    if h.bad || h.len != 8 {
        return None;
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&h.v);
    Some(u64::from_be_bytes(a))
}
