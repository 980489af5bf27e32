//! Targets (ids, processors, features) and the metadata note.

use super::*;

#[test]
fn processor_table_names_the_current_gpus() {
    for (mach, name) in [
        (0x02c, "gfx900"),
        (0x02f, "gfx906"),
        (0x030, "gfx908"),
        (0x032, "gfx90c"),
        (0x03f, "gfx90a"),
        (0x040, "gfx940"),
        (0x04b, "gfx941"),
        (0x04c, "gfx942"),
        (0x033, "gfx1010"),
        (0x036, "gfx1030"),
        (0x045, "gfx1036"),
        (0x041, "gfx1100"),
        (0x044, "gfx1103"),
        (0x043, "gfx1150"),
        (0x04a, "gfx1151"),
        (0x048, "gfx1200"),
        (0x04e, "gfx1201"),
    ] {
        assert_eq!(target::processor_name(mach), Some(name));
    }
    // Every name is distinct.
    let mut names: Vec<_> = (0..=0xff).filter_map(target::processor_name).collect();
    let all = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all);
}

#[test]
fn target_ids_print_and_parse() {
    let t = |xnack, sramecc| Target {
        processor: "gfx90a".into(),
        xnack,
        sramecc,
    };
    assert_eq!(t(Feature::Any, Feature::Any).to_string(), "gfx90a");
    assert_eq!(
        t(Feature::Unsupported, Feature::Unsupported).to_string(),
        "gfx90a"
    );
    assert_eq!(t(Feature::On, Feature::Any).to_string(), "gfx90a:xnack+");
    assert_eq!(
        t(Feature::On, Feature::Off).to_string(),
        "gfx90a:sramecc-:xnack+"
    );
    assert_eq!(
        Target::parse("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
        Some(t(Feature::Off, Feature::On))
    );
    assert_eq!(
        Target::parse("gfx90a:xnack+"),
        Some(t(Feature::On, Feature::Any))
    );
    assert_eq!(
        Target::parse("amdgcn-amd-amdhsa--gfx10-3-generic")
            .unwrap()
            .processor,
        "gfx10-3-generic"
    );
    assert_eq!(
        Target::parse("gfx90a:tgsplit+"),
        Some(t(Feature::Any, Feature::Any))
    );
    for bad in [
        "",
        ":xnack+",
        "gfx90a:xnack",
        "amdgcn-amd-amdhsa",
        "amdgcn-amd-amdhsa--",
    ] {
        assert_eq!(Target::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn runs_on_matches_processor_and_required_features() {
    let t = |xnack, sramecc| Target {
        processor: "gfx90a".into(),
        xnack,
        sramecc,
    };
    let agent = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";
    assert!(t(Feature::Any, Feature::Any).runs_on(agent));
    assert!(t(Feature::Off, Feature::On).runs_on(agent));
    assert!(t(Feature::Unsupported, Feature::On).runs_on(agent));
    assert!(!t(Feature::On, Feature::Any).runs_on(agent));
    assert!(!t(Feature::Any, Feature::Off).runs_on(agent));
    assert!(!t(Feature::On, Feature::Any).runs_on("gfx90a"));
    assert!(!t(Feature::Any, Feature::Any).runs_on("amdgcn-amd-amdhsa--gfx90c"));
    assert!(!t(Feature::Any, Feature::Any).runs_on(""));
}

#[test]
fn metadata_errors_name_their_place() {
    let kernel_without = |missing: &str| {
        let mut pairs = vec![
            (".name", M::Str("k")),
            (".symbol", M::Str("k.kd")),
            (".kernarg_segment_size", M::U(16)),
            (".kernarg_segment_align", M::U(8)),
            (".group_segment_fixed_size", M::U(0)),
            (".private_segment_fixed_size", M::U(0)),
        ];
        pairs.retain(|(k, _)| *k != missing);
        M::map(vec![("amdhsa.kernels", M::Arr(vec![M::map(pairs)]))])
    };
    for key in [
        ".name",
        ".symbol",
        ".kernarg_segment_size",
        ".kernarg_segment_align",
        ".group_segment_fixed_size",
        ".private_segment_fixed_size",
    ] {
        let e = parse_metadata(&kernel_without(key).bytes()).unwrap_err();
        assert_eq!(
            e,
            CodeObjectError::Metadata {
                path: format!("amdhsa.kernels[0]{key}"),
                reason: "missing"
            }
        );
    }
    let cases: Vec<(M, &str, &str)> = vec![
        (M::Arr(vec![]), "(root)", "not a map"),
        (
            M::map(vec![("amdhsa.version", M::Arr(vec![M::U(1)]))]),
            "amdhsa.version",
            "not a sequence",
        ),
        (
            M::map(vec![(
                "amdhsa.version",
                M::Arr(vec![M::U(1), M::U(1 << 40)]),
            )]),
            "amdhsa.version",
            "not two unsigned",
        ),
        (
            M::map(vec![("amdhsa.target", M::U(1))]),
            "amdhsa.target",
            "not a UTF-8 string",
        ),
        (
            M::map(vec![("amdhsa.kernels", M::U(1))]),
            "amdhsa.kernels",
            "not a sequence",
        ),
        (
            M::map(vec![("amdhsa.kernels", M::Arr(vec![M::U(1)]))]),
            "amdhsa.kernels[0]",
            "not a map",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(".args", M::U(0))])]),
            )]),
            "amdhsa.kernels[0].args",
            "not a sequence",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(".args", M::Arr(vec![M::U(0)]))])]),
            )]),
            "amdhsa.kernels[0].args[0]",
            "not a map",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![
                        arg(0, 8, "by_value"),
                        M::map(vec![(".size", M::U(4)), (".value_kind", M::Str("x"))]),
                    ]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[1].offset",
            "missing",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![M::map(vec![
                        (".offset", M::U(1 << 32)),
                        (".size", M::U(4)),
                        (".value_kind", M::Str("x")),
                    ])]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[0].offset",
            "out of range",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![M::map(vec![
                        (".offset", M::Str("0")),
                        (".size", M::U(4)),
                        (".value_kind", M::Str("x")),
                    ])]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[0].offset",
            "not an unsigned integer",
        ),
        (
            M::map(vec![(
                "amdhsa.kernels",
                M::Arr(vec![M::map(vec![(
                    ".args",
                    M::Arr(vec![M::map(vec![
                        (".offset", M::U(0)),
                        (".size", M::U(4)),
                        (".value_kind", M::U(1)),
                    ])]),
                )])]),
            )]),
            "amdhsa.kernels[0].args[0].value_kind",
            "not a UTF-8 string",
        ),
    ];
    for (meta, path, reason) in cases {
        let e = parse_metadata(&meta.bytes()).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(path), "{text:?} does not name {path:?}");
        assert!(text.contains(reason), "{text:?} does not say {reason:?}");
    }
    // Through a whole code object, the errors are the same.
    let img = Image::new(&kernel_without(".symbol"));
    error_of(img.parse(), &["amdhsa.kernels[0].symbol", "missing"]);
}

#[test]
fn metadata_without_kernels_or_version_reads() {
    let m = parse_metadata(&M::map(vec![]).bytes()).unwrap();
    assert_eq!(
        m,
        Metadata {
            version: None,
            target: None,
            kernels: Vec::new()
        }
    );
    // Negative-fixint-free non-negative ints count as unsigned.
    let m = parse_metadata(b"\x81\xaeamdhsa.version\x92\xd0\x01\x02").unwrap();
    assert_eq!(m.version, Some([1, 2]));
    let e = parse_metadata(b"\x81\xaeamdhsa.version\x92\xff\x02").unwrap_err();
    assert!(e.to_string().contains("amdhsa.version"));
}
