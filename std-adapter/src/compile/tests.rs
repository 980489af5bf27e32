use super::*;

#[test]
fn opt_levels_and_triples() {
    assert_eq!(CompileOptions::parse_opt_level("O2"), Some(2));
    assert_eq!(CompileOptions::parse_opt_level("-O0"), Some(0));
    assert_eq!(CompileOptions::parse_opt_level("O4"), None);
    assert_eq!(
        Target::backend_of_triple("nvptx64-nvidia-cuda"),
        Some(BackendKind::Cuda)
    );
    assert_eq!(
        Target::backend_of_triple("x86_64-pc-linux-gnu"),
        Some(BackendKind::Host)
    );
    assert_eq!(Target::backend_of_triple("riscv64"), None);
}

#[test]
fn an_image_read_back_is_a_regular_file_within_the_output_limit() {
    let dir = std::env::temp_dir().join(format!("reprise-read-{}", fastrand::u64(..)));
    std::fs::create_dir(&dir).unwrap();
    let image = dir.join("image.so");
    std::fs::write(&image, vec![7u8; 4097]).unwrap();
    assert_eq!(read_limited(&image, 4097).unwrap().len(), 4097);
    let e = read_limited(&image, 4096).unwrap_err();
    assert!(
        matches!(
            e,
            CompileError::LimitHit {
                limit: Limit::Output(4096),
                ..
            }
        ),
        "{e}"
    );
    // A FIFO is refused without waiting for a writer; a link is not
    // followed.
    let fifo = dir.join("fifo.so");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(read_limited(&fifo, 4096).is_err());
    let link = dir.join("link.so");
    std::os::unix::fs::symlink(&image, &link).unwrap();
    assert!(read_limited(&link, 1 << 20).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_newer_bitcode_is_refused_naming_both_versions() {
    let info = BitcodeInfo {
        producer: Some("LLVM19.1.7".into()),
        ..Default::default()
    };
    let tc = Toolchain {
        clang: "clang-16".into(),
        llc: None,
        lld: None,
        version: (16, 0, 6),
        omp_lib: None,
    };
    let e = check_version(Path::new("k.bc"), &info, &tc)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("19.1.7") && e.contains("16.0.6") && e.contains("k.bc"),
        "{e}"
    );
    let older = BitcodeInfo {
        producer: Some("LLVM16.0.6".into()),
        ..Default::default()
    };
    assert!(check_version(Path::new("k.bc"), &older, &tc).is_ok());
}
