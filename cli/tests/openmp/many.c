/* More than eight mapped arrays: ten inputs and an output. */
#include <stdio.h>
#include <stdlib.h>

#define N 512

int main(void) {
  int *a[10];
  for (int k = 0; k < 10; k++) {
    a[k] = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
      a[k][i] = k * 1000 + i;
  }
  long *out = calloc(N, sizeof(long));
  int *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4];
  int *a5 = a[5], *a6 = a[6], *a7 = a[7], *a8 = a[8], *a9 = a[9];
#pragma omp target teams distribute parallel for map(to : a0[0:N], a1[0:N], a2[0:N], a3[0:N], a4[0:N], a5[0:N], a6[0:N], a7[0:N], a8[0:N], a9[0:N]) map(from : out[0:N])
  for (int i = 0; i < N; i++)
    out[i] = (long)a0[i] + a1[i] * 2 + a2[i] * 3 + a3[i] * 4 + a4[i] * 5 + a5[i] * 6 +
             a6[i] * 7 + a7[i] * 8 + a8[i] * 9 + a9[i] * 10;
  printf("%ld\n", out[N - 1]);
  return 0;
}
