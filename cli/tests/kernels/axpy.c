/* y[i] = alpha * x[i] + y[i]; alpha is a global, n a scalar in a pointer slot.
 * `axpy_calls` counts launches, so a replay that does not restore globals
 * produces a different `calls` value in out[0]. */
#include <stdint.h>

float alpha = 1.0f;
long axpy_calls = 0;
const int axpy_version = 3; /* read-only: never recorded as a global */

void axpy(const float *x, float *y, intptr_t n, long *calls_out) {
    for (intptr_t i = 0; i < n; i++)
        y[i] = alpha * x[i] + y[i];
    axpy_calls++;
    *calls_out = axpy_calls * 100 + axpy_version;
}
