/* Kernels that fault on purpose, for the host executor's fault tests. Every
 * argument is pointer-sized, as the host kernel ABI requires. */
#include <stdint.h>

const long read_only = 7; /* in a read-only segment of the image */

/* *p = v: faults when p is not writable memory. */
void store(long *p, intptr_t v) { *p = v; }

/* Writes into the image's read-only data: a protection fault. */
void store_read_only(intptr_t v) { *(volatile long *)&read_only = v; }

/* *out = a / b: SIGFPE when b is 0. */
void divide(long *out, intptr_t a, intptr_t b) {
    *out = (long)(a / *(volatile intptr_t *)&b);
}

/* An invalid instruction: SIGILL. */
void illegal(void) { __builtin_trap(); }

static long deep(long n, volatile char *up) {
    volatile char frame[512];
    frame[0] = (char)(up[0] + 1);
    if (n <= 0)
        return frame[0];
    /* Not a tail call: the frame is live after it returns. */
    return deep(n - 1, frame) + frame[0];
}

/* Recurses n levels deep, 512+ bytes a level: overflows any thread stack
 * for n large enough. */
void recurse(long *out, intptr_t n) {
    volatile char top[1] = {0};
    *out = deep(n, top);
}

/* Faults inside the C library, not in this image's code. The calls go
 * through volatile pointers so that the compiler cannot inline them. */

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* memset(p, 0, n) in libc: faults there when p is not writable. */
void libc_memset(void *p, intptr_t n) {
    void *(*volatile f)(void *, int, size_t) = memset;
    f(p, 0, (size_t)n);
}

/* fwrite of the n bytes at p to stdout: glibc locks stdout, then faults
 * copying from p when p is a bad pointer, with the lock held. */
void libc_write(const void *p, intptr_t n) {
    size_t (*volatile f)(const void *, size_t, size_t, FILE *) = fwrite;
    f(p, 1, (size_t)n, stdout);
}

/* Calls the function at f: a fault when f is a bad address. Not a tail
 * call (the asm after it must run after it returns). */
void call_pointer(intptr_t f) {
    ((void (*)(void))f)();
    __asm__ volatile("" ::: "memory");
}

#if defined(__x86_64__)
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Sends this thread the asynchronous SIGBUS of a memory error found in the
 * background (BUS_MCEERR_AO), with the syscall instruction in this image,
 * so that the signal arrives while this image's code runs. *out: the
 * syscall's result (0, or -errno). */
void send_async_bus(long *out) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGBUS;
    si.si_code = 5; /* BUS_MCEERR_AO */
    si.si_addr = out;
    long tgid = getpid(), tid = syscall(SYS_gettid), ret;
    register long r10 __asm__("r10") = (long)&si;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"((long)SYS_rt_tgsigqueueinfo), "D"(tgid), "S"(tid),
                       "d"((long)SIGBUS), "r"(r10)
                     : "rcx", "r11", "memory");
    *out = ret;
}
#endif

/* Jumps to the function at f (a tail call: no return address into this
 * image is pushed). */
void jump_pointer(intptr_t f) { ((void (*)(void))f)(); }

/* Writes n copies of v upward from a two-word local array: for n > 2, past
 * its end, over what lies above it, its return address among them (the
 * image is built without a stack protector, as clang builds offload
 * images). The pointer is hidden from the compiler, which could otherwise
 * drop the out-of-bounds stores. */
__attribute__((noinline)) static void overrun(intptr_t v, intptr_t n) {
    volatile intptr_t buf[2];
    volatile intptr_t *p = buf;
    __asm__("" : "+r"(p));
    for (intptr_t i = 0; i < n; i++)
        p[i] = v;
}

/* Overruns a stack buffer with n copies of v, and returns to v when the
 * overrun reached the return address (n of 8 does at -O2, wherever the
 * compiler put the array). The cushion takes the rest of the overrun, so
 * that the frames above this one stay intact. */
void smash(intptr_t v, intptr_t n) {
    volatile char cushion[256];
    cushion[0] = 0;
    overrun(v, n);
    cushion[1] = cushion[0];
}

#if defined(__x86_64__)
/* Sets the stack pointer to sp and jumps to f: when both are bad
 * addresses, the fetch at f faults with no stack to read. */
void wild_stack(intptr_t f, intptr_t sp) {
    __asm__ volatile("mov %1, %%rsp\n\tjmp *%0" ::"r"(f), "r"(sp));
    __builtin_unreachable();
}
#endif

/* Overruns a stack buffer upward with n bytes of 0x41 (n a multiple of 8),
 * with no cushion: far past its own frame, over its return address and the
 * frames of everything that called it, as far as n reaches. The return
 * address becomes 0x4141414141414141, not a canonical address: the `ret`
 * itself faults, if nothing above faulted first. */
void smash_far(intptr_t n) {
    overrun((intptr_t)0x4141414141414141, n / 8);
    __asm__ volatile("" ::: "memory"); /* not a tail call */
}
