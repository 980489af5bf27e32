/* Two kernels in one process: the second one's buffers are allocated after
 * the first one's, so its snapshot starts at an address none of its
 * arguments holds. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 1000;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  float *u = malloc(n * sizeof(float)), *v = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) {
    x[i] = i;
    y[i] = 1;
    u[i] = 2 * i;
    v[i] = 3;
  }
#pragma omp target teams distribute parallel for map(to : x[0:n]) map(tofrom : y[0:n])
  for (int i = 0; i < n; i++)
    y[i] += x[i];
#pragma omp target teams distribute parallel for map(to : u[0:n]) map(tofrom : v[0:n])
  for (int i = 0; i < n; i++)
    v[i] *= u[i];
  printf("%f %f\n", y[n - 1], v[n - 1]);
  return 0;
}
