use cudarc::driver::sys;

use super::check_whole;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

fn refused(image: &[u8]) -> bool {
    check_whole("cuModuleLoadData", image)
        .is_err_and(|f| f.code() == sys::CUresult::CUDA_ERROR_INVALID_IMAGE)
}

#[test]
fn whole_images_pass() {
    for name in ["saxpy.sm_90.cubin", "saxpy.sm_90.fatbin"] {
        assert!(
            check_whole("cuModuleLoadData", &fixture(name)).is_ok(),
            "{name}"
        );
    }
    let mut ptx = fixture("saxpy.ptx");
    ptx.push(0);
    assert!(check_whole("cuModuleLoadData", &ptx).is_ok());
}

#[test]
fn images_the_driver_would_read_past_are_refused() {
    for name in ["saxpy.sm_90.cubin", "saxpy.sm_90.fatbin"] {
        let image = fixture(name);
        for cut in [1, 16, 63, 64, image.len() / 2, image.len() - 1] {
            assert!(refused(&image[..cut]), "{name} cut to {cut} bytes");
        }
    }
    // PTX the driver would read past its end, for want of a NUL.
    let ptx = fixture("saxpy.ptx");
    assert!(!ptx.contains(&0));
    assert!(refused(&ptx));
    // A 32-bit ELF file: not a cubin the checks can vouch for.
    let mut elf32 = fixture("saxpy.sm_90.cubin");
    elf32[4] = 1;
    assert!(refused(&elf32));
}

#[test]
fn a_section_past_the_end_is_refused() {
    let mut cubin = fixture("saxpy.sm_90.cubin");
    let shoff = u64::from_le_bytes(cubin[0x28..0x30].try_into().unwrap()) as usize;
    let shentsize = u16::from_le_bytes(cubin[0x3A..0x3C].try_into().unwrap()) as usize;
    // Section 1's `sh_size`, one byte past the file.
    let at = shoff + shentsize + 0x20;
    let offset = u64::from_le_bytes(cubin[at - 8..at].try_into().unwrap());
    let past = cubin.len() as u64 - offset + 1;
    cubin[at..at + 8].copy_from_slice(&past.to_le_bytes());
    assert!(refused(&cubin));
}
