//! The MessagePack reader: scalars, containers, truncation, lying counts,
//! nesting.

use super::*;

/// `msgpack::read` on `bytes`.
fn mp(bytes: &[u8]) -> Result<Value<'_>, CodeObjectError> {
    msgpack::read(bytes, 100)
}

#[test]
fn msgpack_scalars() {
    assert_eq!(mp(b"\x00").unwrap(), Value::Uint(0));
    assert_eq!(mp(b"\x7f").unwrap(), Value::Uint(127));
    assert_eq!(mp(b"\xff").unwrap(), Value::Int(-1));
    assert_eq!(mp(b"\xe0").unwrap(), Value::Int(-32));
    assert_eq!(mp(b"\xc0").unwrap(), Value::Nil);
    assert_eq!(mp(b"\xc2").unwrap(), Value::Bool(false));
    assert_eq!(mp(b"\xc3").unwrap(), Value::Bool(true));
    assert_eq!(mp(b"\xcc\xff").unwrap(), Value::Uint(255));
    assert_eq!(mp(b"\xcd\x01\x02").unwrap(), Value::Uint(0x102));
    assert_eq!(
        mp(b"\xce\x01\x02\x03\x04").unwrap(),
        Value::Uint(0x0102_0304)
    );
    assert_eq!(
        mp(b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff").unwrap(),
        Value::Uint(u64::MAX)
    );
    assert_eq!(mp(b"\xd0\x80").unwrap(), Value::Int(-128));
    assert_eq!(mp(b"\xd1\xff\xfe").unwrap(), Value::Int(-2));
    assert_eq!(
        mp(b"\xd2\x7f\xff\xff\xff").unwrap(),
        Value::Int(i32::MAX.into())
    );
    assert_eq!(mp(b"\xd3\x80\0\0\0\0\0\0\0").unwrap(), Value::Int(i64::MIN));
    assert_eq!(mp(b"\xca\x3f\x80\0\0").unwrap(), Value::Float(1.0));
    assert_eq!(
        mp(&[&[0xcb][..], &2.5f64.to_bits().to_be_bytes()].concat()).unwrap(),
        Value::Float(2.5)
    );
    assert_eq!(mp(b"\xa3abc").unwrap(), Value::Str(b"abc"));
    assert_eq!(mp(b"\xd9\x01x").unwrap(), Value::Str(b"x"));
    assert_eq!(mp(b"\xda\0\x01x").unwrap(), Value::Str(b"x"));
    assert_eq!(mp(b"\xdb\0\0\0\x01x").unwrap(), Value::Str(b"x"));
    assert_eq!(mp(b"\xc4\x02ab").unwrap(), Value::Bin(b"ab"));
    assert_eq!(mp(b"\xc5\0\x01a").unwrap(), Value::Bin(b"a"));
    assert_eq!(mp(b"\xc6\0\0\0\x01a").unwrap(), Value::Bin(b"a"));
    assert_eq!(mp(b"\xd4\x05a").unwrap(), Value::Ext(5, b"a"));
    assert_eq!(
        mp(b"\xd8\xff0123456789abcdef").unwrap(),
        Value::Ext(-1, b"0123456789abcdef")
    );
    assert_eq!(mp(b"\xc7\x01\x02a").unwrap(), Value::Ext(2, b"a"));
    assert_eq!(mp(b"\xc8\0\x01\x02a").unwrap(), Value::Ext(2, b"a"));
    assert_eq!(mp(b"\xc9\0\0\0\x01\x02a").unwrap(), Value::Ext(2, b"a"));
    // Trailing bytes after the value are left alone.
    assert_eq!(mp(b"\x01\x02").unwrap(), Value::Uint(1));
    assert_eq!(mp(b"\xa1\xff").unwrap().as_str(), None, "not UTF-8");
    assert_eq!(Value::Int(-1).as_u64(), None);
    assert_eq!(Value::Int(7).as_u64(), Some(7));
}

#[test]
fn msgpack_containers() {
    assert_eq!(
        mp(b"\x92\x01\xa1a").unwrap(),
        Value::Array(vec![Value::Uint(1), Value::Str(b"a")])
    );
    assert_eq!(
        mp(b"\xdc\0\x01\xc0").unwrap(),
        Value::Array(vec![Value::Nil])
    );
    assert_eq!(
        mp(b"\xdd\0\0\0\x01\xc0").unwrap(),
        Value::Array(vec![Value::Nil])
    );
    let map = mp(b"\x82\xa1a\x01\xa1a\x02").unwrap();
    assert_eq!(
        map.get("a"),
        Some(&Value::Uint(1)),
        "the first of a key wins"
    );
    assert_eq!(map.get("b"), None);
    assert_eq!(Value::Nil.get("a"), None);
    assert_eq!(
        mp(b"\xde\0\x01\x01\x02").unwrap(),
        Value::Map(vec![(Value::Uint(1), Value::Uint(2))])
    );
    assert_eq!(
        mp(b"\xdf\0\0\0\x01\x01\x02").unwrap(),
        Value::Map(vec![(Value::Uint(1), Value::Uint(2))])
    );
}

/// The reason of a MessagePack error, checked to be at `offset`.
fn mp_error(bytes: &[u8], offset: u64) -> &'static str {
    match mp(bytes).unwrap_err() {
        CodeObjectError::MsgPack { offset: at, reason } => {
            assert_eq!(at, offset, "{bytes:x?}: {reason}");
            reason
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn msgpack_truncated() {
    for bytes in [
        &b""[..],
        b"\xcc",
        b"\xcd\x01",
        b"\xce\x01\x02\x03",
        b"\xcf\x01",
        b"\xd0",
        b"\xd3\x01",
        b"\xca\0\0",
        b"\xcb\0",
        b"\xa2a",
        b"\xd9",
        b"\xd9\x02a",
        b"\xda\0",
        b"\xdb\0\0\0\x02a",
        b"\xc4\x01",
        b"\xc6\0\0\0\x02a",
        b"\xc7\x01",
        b"\xc7\x01\x02",
        b"\xd4",
        b"\xd4\x01",
        b"\xd8\x01abc",
        b"\xdc\0",
        b"\xdd\0\0",
        b"\xde\0",
        b"\xdf\0\0\0",
    ] {
        assert!(mp_error(bytes, 100).contains("truncated"), "{bytes:x?}");
    }
    // Inside a container, the offset is the inner value's.
    assert!(mp_error(b"\x92\x01\xcd\x01", 102).contains("truncated"));
    assert!(mp_error(b"\x81\xa1a\xa5abc", 103).contains("truncated"));
    assert!(mp_error(b"\xc1", 100).contains("0xc1"));
}

#[test]
fn msgpack_huge_counts_are_refused_before_allocating() {
    for bytes in [
        &b"\xdd\xff\xff\xff\xff"[..],
        b"\xdf\xff\xff\xff\xff\x01\x02",
        b"\xdc\xff\xff\x01\x02\x03",
        b"\xde\x00\x02\x01\x02\x03",
        b"\x9f\x01",
        b"\x8f\x01",
    ] {
        assert_eq!(
            mp_error(bytes, 100),
            "more elements than bytes left",
            "{bytes:x?}"
        );
    }
    for bytes in [
        &b"\xdb\xff\xff\xff\xff"[..],
        b"\xc6\xff\xff\xff\xff",
        b"\xc9\xff\xff\xff\xff\x01",
    ] {
        assert!(mp_error(bytes, 100).contains("truncated"), "{bytes:x?}");
    }
}

#[test]
fn msgpack_nesting_is_limited() {
    let nested = |depth: usize| {
        let mut bytes = vec![0x91; depth];
        bytes.push(0xc0);
        bytes
    };
    let deepest = nested(MAX_DEPTH);
    let mut v = mp(&deepest).unwrap();
    for _ in 0..MAX_DEPTH {
        let Value::Array(mut items) = v else {
            panic!("not an array")
        };
        v = items.pop().unwrap();
    }
    assert_eq!(v, Value::Nil);
    assert_eq!(
        mp_error(&nested(MAX_DEPTH + 1), 100 + MAX_DEPTH as u64),
        "containers nested too deep"
    );
    // Far deeper input fails the same, without going deeper.
    assert_eq!(
        mp_error(&nested(100_000), 100 + MAX_DEPTH as u64),
        "containers nested too deep"
    );
    let mut maps = [0x81, 0x00].repeat(MAX_DEPTH + 1);
    maps.push(0xc0);
    assert_eq!(
        mp_error(&maps, 100 + 2 * MAX_DEPTH as u64),
        "containers nested too deep"
    );
}
