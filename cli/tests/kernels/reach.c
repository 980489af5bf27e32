/* Kernels for reachable-only recording (cli/tests/reachable.rs).
 *
 * gather: out[i] = sum over j of table[j][i]; the table is an array of
 * pointers to other buffers, which only a scan inside it finds.
 * read_past: y[i] = x[i + skip]: with skip past x's end, it reads memory
 * no argument points into.
 * write_past: y[i + skip] = 7: writes past y's end. */
#include <stdint.h>

void gather(const float *const *table, intptr_t ntable, float *out, intptr_t n) {
    for (intptr_t i = 0; i < n; i++) {
        float s = 0.0f;
        for (intptr_t j = 0; j < ntable; j++)
            s += table[j][i];
        out[i] = s;
    }
}

void read_past(const float *x, float *y, intptr_t n, intptr_t skip) {
    for (intptr_t i = 0; i < n; i++)
        y[i] = x[i + skip];
}

void write_past(float *y, intptr_t n, intptr_t skip) {
    for (intptr_t i = 0; i < n; i++)
        y[i + skip] = 7.0f;
}
