/* By-value scalars beside pointers, as real kernels pass them: a trip count
 * of 100000, a non-zero float and a double firstprivate, and a 64-bit
 * integer of more than 64 Ki. Each is a large number in ArgPtrs. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 100000;
  float a = 1.25f;
  double b = 3.0;
  long shift = 1L << 40;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) {
    x[i] = i % 97;
    y[i] = 1;
  }
#pragma omp target teams distribute parallel for firstprivate(a, b, shift) map(to : x[0:n]) map(tofrom : y[0:n])
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i] + (float)b + (float)(shift >> 40);
  printf("%f %f\n", y[1], y[n - 1]);
  return 0;
}
