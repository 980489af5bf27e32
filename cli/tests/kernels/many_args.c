/* 24 arguments: out[0] = sum over i of (i + 1) * a_i, and each argument is
 * also stored, so a missed or shifted stack argument shows. */
#include <stdint.h>

void many_args(long *out, long a1, long a2, long a3, long a4, long a5, long a6,
               long a7, long a8, long a9, long a10, long a11, long a12,
               long a13, long a14, long a15, long a16, long a17, long a18,
               long a19, long a20, long a21, long a22, long a23) {
    long a[23] = {a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12,
                  a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23};
    long sum = 0;
    for (int i = 0; i < 23; i++) {
        sum += (i + 1) * a[i];
        out[i + 1] = a[i];
    }
    out[0] = sum;
}
