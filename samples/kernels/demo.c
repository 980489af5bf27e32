/* The kernel `reprise demo` records: a damped three-point stencil over a
 * float array, scaled by a device global. Host-plugin ABI: every argument is
 * pointer-sized (the element count travels as a scalar in a pointer slot). */
#include <stdint.h>

float demo_scale = 0.5f;           /* a global the replay must restore */
unsigned long demo_launches = 0;   /* changes with every launch */

void demo_stencil(const float *in, float *out, intptr_t n) {
    for (intptr_t i = 0; i < n; i++) {
        float left = i > 0 ? in[i - 1] : in[i];
        float right = i + 1 < n ? in[i + 1] : in[i];
        out[i] = demo_scale * (left + 2.0f * in[i] + right) * 0.25f + (float)demo_launches;
    }
    demo_launches++;
}

/* The kernel `reprise bench` launches: it touches one counter, so that what
 * is measured is the cost of recording, not of the kernel. */
void demo_touch(long *counter) {
    (*counter)++;
}
