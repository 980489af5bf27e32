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
