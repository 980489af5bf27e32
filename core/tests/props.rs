//! Property tests: random global sets round-trip in both layouts, and no
//! input (globals blob, descriptor JSON, image) makes a decoder panic.

use proptest::prelude::*;
use reprise_core::globals::{self, Layout};
use reprise_core::record::KernelRecord;

fn layouts() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::Seed), Just(Layout::Current)]
}

fn global_sets() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    prop::collection::vec(
        (
            "[a-zA-Z_][a-zA-Z0-9_.$]{0,40}",
            prop::collection::vec(any::<u8>(), 0..300),
        ),
        0..12,
    )
}

proptest! {
    #[test]
    fn globals_round_trip(layout in layouts(), set in global_sets()) {
        let items = set.iter().map(|(n, b)| (n.as_str(), b.as_slice()));
        let len = globals::encoded_len(layout, items.clone()).unwrap();
        let mut sink = Vec::new();
        let mut w = VecWriter(&mut sink);
        prop_assert_eq!(globals::encode(layout, items.clone(), &mut w).unwrap(), len);
        prop_assert_eq!(sink.len(), len);
        let mut slice = vec![0u8; len];
        prop_assert_eq!(globals::encode_into(layout, items, &mut slice).unwrap(), len);
        prop_assert_eq!(&slice, &sink);

        let decoded: Vec<_> = globals::decode(layout, &sink).unwrap().collect::<Result<_, _>>().unwrap();
        let expected: Vec<_> = set.iter().filter(|(_, b)| !b.is_empty()).collect();
        prop_assert_eq!(decoded.len(), expected.len());
        for (d, (name, bytes)) in decoded.iter().zip(expected) {
            prop_assert_eq!(d.name, name.as_str());
            prop_assert_eq!(d.bytes, bytes.as_slice());
            prop_assert_eq!(&sink[d.offset..d.offset + bytes.len()], bytes.as_slice());
        }
    }

    #[test]
    fn truncating_a_blob_is_always_an_error(layout in layouts(), set in global_sets(), cut in any::<prop::sample::Index>()) {
        let items = set.iter().map(|(n, b)| (n.as_str(), b.as_slice()));
        let len = globals::encoded_len(layout, items.clone()).unwrap();
        prop_assume!(len > 0 && set.iter().any(|(_, b)| !b.is_empty()));
        let mut blob = vec![0u8; len];
        globals::encode_into(layout, items, &mut blob).unwrap();
        let cut = cut.index(len);
        let result = globals::decode(layout, &blob[..cut]).and_then(|d| d.validate());
        match layout {
            // The count header makes every cut detectable.
            Layout::Current => prop_assert!(result.is_err()),
            // The seed layout has no count: a cut exactly between entries is a
            // valid shorter blob, any other cut is an error.
            Layout::Seed => {
                let mut boundaries = vec![0usize];
                for (n, b) in set.iter().filter(|(_, b)| !b.is_empty()) {
                    boundaries.push(boundaries.last().unwrap() + n.len() + 5 + b.len());
                }
                match boundaries.iter().position(|&b| b == cut) {
                    Some(k) => prop_assert_eq!(result, Ok(k)),
                    None => prop_assert!(result.is_err()),
                }
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_globals_decoder(layout in layouts(), bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(d) = globals::decode(layout, &bytes) {
            for g in d.flatten() {
                prop_assert!(g.offset + g.bytes.len() <= bytes.len());
            }
        }
    }

    #[test]
    fn lying_size_fields_are_errors(name in "[a-z]{1,8}", size in (1u64 << 20)..u64::MAX) {
        let mut blob = Vec::new();
        blob.extend_from_slice(&1u32.to_le_bytes());
        blob.extend_from_slice(&(name.len() as u32 + 1).to_le_bytes());
        blob.extend_from_slice(&size.to_le_bytes());
        blob.extend_from_slice(name.as_bytes());
        blob.push(0);
        blob.extend_from_slice(&[1, 2, 3]);
        let r = globals::decode(Layout::Current, &blob).unwrap().validate();
        let is_size_error = matches!(r, Err(globals::DecodeError::SizeExceedsInput { .. }));
        prop_assert!(is_size_error);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_record_parser(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = KernelRecord::from_json(&bytes);
    }

    #[test]
    fn json_shaped_noise_never_panics(text in r#"\{("[A-Za-z]{1,12}":(-?[0-9]{1,22}|\[[0-9,-]{0,30}\]|"[^"\\]{0,10}"|\{\}),?){0,14}\}"#) {
        let _ = KernelRecord::from_json(text.as_bytes());
    }

    #[test]
    fn image_sniffing_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = reprise_core::image::sniff(&bytes).backend();
    }
}

struct VecWriter<'a>(&'a mut Vec<u8>);

impl embedded_io::ErrorType for VecWriter<'_> {
    type Error = core::convert::Infallible;
}

impl embedded_io::Write for VecWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
