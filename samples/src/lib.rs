//! The built-in kernels `reprise demo` and `reprise bench` launch, one per
//! executor kind: [`demo_kernel`] and [`bench_kernel`] choose them, from the
//! host image [`DEMO_IMAGE`] (compiled from `kernels/demo.c` at build time),
//! the CUDA PTX [`SAXPY_PTX`] and the AMD code object [`SAXPY_HSACO`].
//!
//! The facade re-exports this crate as `reprise::samples` (and the image as
//! `reprise::DEMO_IMAGE`); it sits below the facade, on the core's and the
//! std adapter's types only.

use reprise_core::{BackendKind, LaunchConfig};
use reprise_std::Args;

/// A sample kernel image: an ELF x86-64 shared object with the host kernels
/// `demo_stencil(const float *in, float *out, long n)` (reads the globals
/// `demo_scale` and counts calls in `demo_launches`) and
/// `demo_touch(long *counter)`. `reprise demo` records the first, `reprise
/// bench` the second.
pub const DEMO_IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kernels/demo.so"));

/// A built-in kernel: its image and name, its arguments given two device
/// addresses and a count (what each means is the kernel's: see
/// [`demo_kernel`] and [`bench_kernel`]), and its geometry given the count.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinKernel {
    /// The image.
    pub image: &'static [u8],
    /// The kernel's name.
    pub name: &'static str,
    /// Its arguments.
    pub args: fn(u64, u64, u64) -> Args,
    /// Its geometry.
    pub geometry: fn(u64) -> LaunchConfig,
}

/// One block of one thread: what host kernels are launched with (the host
/// executor passes no geometry to a kernel).
const SERIAL: LaunchConfig = LaunchConfig {
    grid: [1, 1, 1],
    block: [1, 1, 1],
    shared_mem: 0,
};

/// The kernel `reprise demo` records on an executor of `kind`, or `None`
/// when it has none: arguments `(input, output, n)` for `n` floats in and
/// out, geometry for `n`. On the host `demo_stencil` of [`DEMO_IMAGE`]
/// (a stencil that reads a device global); on CUDA `saxpy` with `a` = 2
/// (`output = 2 * input + output`), 256 threads a block.
pub fn demo_kernel(kind: BackendKind) -> Option<BuiltinKernel> {
    match kind {
        BackendKind::Host => Some(BuiltinKernel {
            image: DEMO_IMAGE,
            name: "demo_stencil",
            args: |input, output, n| Args::new().ptr(input).ptr(output).scalar(n),
            geometry: |_| SERIAL,
        }),
        BackendKind::Cuda => Some(BuiltinKernel {
            image: SAXPY_PTX,
            name: "saxpy",
            args: |input, output, n| Args::new().f32(2.0).ptr(input).ptr(output).i32(n as i32),
            geometry: |n| LaunchConfig {
                grid: [(n as u32).div_ceil(256), 1, 1],
                block: [256, 1, 1],
                shared_mem: 0,
            },
        }),
        // The same saxpy, built for AMD GPUs.
        BackendKind::Amdgpu => Some(BuiltinKernel {
            image: SAXPY_HSACO,
            ..demo_kernel(BackendKind::Cuda).expect("the CUDA demo kernel")
        }),
        _ => None,
    }
}

/// The kernel `reprise bench` launches on an executor of `kind`, or `None`
/// when it has none: arguments `(counter, data, data_len)` given the address
/// of an 8-byte counter in the region and of the data that fills the rest
/// of it (0, 0 when there is none), geometry for `data_len`. On the host
/// `demo_touch(long *counter)` of [`DEMO_IMAGE`]; on CUDA a saxpy
/// over the whole region, so the kernel reads and writes the memory the
/// snapshots copy.
pub fn bench_kernel(kind: BackendKind) -> Option<BuiltinKernel> {
    match kind {
        BackendKind::Host => Some(BuiltinKernel {
            image: DEMO_IMAGE,
            name: "demo_touch",
            args: |counter, _, _| Args::new().ptr(counter),
            geometry: |_| SERIAL,
        }),
        BackendKind::Cuda => Some(BuiltinKernel {
            image: SAXPY_PTX,
            name: "saxpy",
            args: |counter, data, data_len| {
                let n = saxpy_elements(data_len);
                let (x, y) = if data_len >= 8 {
                    (data, data + 4 * n)
                } else {
                    (counter, counter)
                };
                Args::new().f32(1.0).ptr(x).ptr(y).i32(n as i32)
            },
            geometry: |data_len| LaunchConfig {
                grid: [saxpy_elements(data_len).div_ceil(256) as u32, 1, 1],
                block: [256, 1, 1],
                shared_mem: 0,
            },
        }),
        BackendKind::Amdgpu => Some(BuiltinKernel {
            image: SAXPY_HSACO,
            ..bench_kernel(BackendKind::Cuda).expect("the CUDA bench kernel")
        }),
        _ => None,
    }
}

/// The AMDGPU code object of the AMD demo's and benchmark's kernel: the
/// same `saxpy(float a, float *x, float *y, int n)` built for gfx90a (MI200)
/// from the AMD executor's fixtures; other GPUs refuse it, naming both
/// targets.
pub const SAXPY_HSACO: &[u8] =
    include_bytes!("../../backends/amdgpu/fixtures/saxpy_mixed.gfx90a.hsaco");

/// The PTX of the CUDA benchmark's (and demo's) kernel: `saxpy(float a,
/// float *x, float *y, int n)` from the CUDA executor's fixtures, compiled
/// for sm_52 so that every GPU from Maxwell on can run it.
pub const SAXPY_PTX: &[u8] = include_bytes!("../../backends/cuda/fixtures/saxpy.sm_52.ptx");

/// Elements of the CUDA benchmark's `saxpy` over `data_len` bytes: `x` is
/// the first half of the data, `y` the second (at least one element, on the
/// counter, when there is no data).
fn saxpy_elements(data_len: u64) -> u64 {
    (data_len / 8).clamp(1, i32::MAX as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_demo_and_a_bench_kernel_in_its_image() {
        for kind in [BackendKind::Host, BackendKind::Cuda, BackendKind::Amdgpu] {
            for k in [demo_kernel(kind), bench_kernel(kind)] {
                let k = k.expect("a built-in kernel");
                assert!(
                    k.image
                        .windows(k.name.len())
                        .any(|w| w == k.name.as_bytes()),
                    "{kind:?}: {} is not in its image",
                    k.name
                );
            }
        }
        assert!(DEMO_IMAGE.starts_with(b"\x7fELF"));
    }
}
