//! Calling a host kernel with a run-time number of pointer-sized arguments.
//!
//! LLVM's host plugin calls kernels through libffi with one `void *` per
//! argument. Without libffi, this calls every kernel through one function
//! type taking [`MAX_ARGS`] pointer-sized arguments, the unused ones zero.
//! Under the x86-64 System V ABI this is exactly a call with the kernel's own
//! argument count: the first six arguments travel in registers, the rest on
//! the stack in order, the callee reads only those it declares, and the
//! caller pops the stack. Hence this module exists only on x86-64.

/// Most arguments a host kernel can take (the capture format's maximum).
pub const MAX_ARGS: usize = reprise_core::record::MAX_ARGS;

macro_rules! trampoline {
    ($($i:literal)*) => {
        type Entry = unsafe extern "C" fn($(trampoline!(@ty $i)),*);

        /// Calls the function at `entry` with `args` (zero-padded).
        ///
        /// # Safety
        /// `entry` must be the address of an `extern "C"` function taking at
        /// most [`MAX_ARGS`] pointer-sized integer or pointer arguments, and
        /// whatever that function does with them must be sound.
        ///
        /// This function must stay a plain old frame (nothing in it with a
        /// destructor): when the kernel faults, the fault guard leaves it
        /// with `siglongjmp` (see `guard.rs`).
        #[cfg(target_arch = "x86_64")]
        pub unsafe fn call(entry: usize, args: &[u64]) {
            let mut a = [0usize; MAX_ARGS];
            for (d, s) in a.iter_mut().zip(args) {
                *d = *s as usize;
            }
            // SAFETY: per this function's contract `entry` is such a function;
            // see the module docs for why the padded call is exact on x86-64.
            unsafe {
                let f: Entry = std::mem::transmute::<usize, Entry>(entry);
                f($(a[$i]),*);
            }
        }
    };
    (@ty $i:literal) => { usize };
}

trampoline!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127);

/// Host kernels run on x86-64 only.
///
/// # Safety
/// Never called: the executor refuses to start elsewhere.
#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn call(_entry: usize, _args: &[u64]) {
    unreachable!("the host executor runs on x86-64 only")
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn sum3(a: usize, b: usize, c: usize) -> usize {
        a + b + c
    }

    static mut SEEN: [usize; 8] = [0; 8];

    extern "C" fn record8(
        a: usize,
        b: usize,
        c: usize,
        d: usize,
        e: usize,
        f: usize,
        g: usize,
        h: usize,
    ) {
        // SAFETY: single-threaded test; nothing else touches SEEN.
        unsafe { SEEN = [a, b, c, d, e, f, g, h] };
    }

    #[test]
    fn stack_arguments_arrive_in_order() {
        // SAFETY: record8 takes 8 pointer-sized arguments.
        unsafe { call(record8 as *const () as usize, &[1, 2, 3, 4, 5, 6, 7, 8]) };
        // SAFETY: read after the call, single-threaded.
        assert_eq!(unsafe { SEEN }, [1, 2, 3, 4, 5, 6, 7, 8]);
        // SAFETY: sum3 takes 3 pointer-sized arguments; its result is ignored.
        unsafe { call(sum3 as *const () as usize, &[1, 2, 3]) };
    }
}
