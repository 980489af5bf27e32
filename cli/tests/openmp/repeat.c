/* One kernel launched several times: LLVM 16 keeps one file per kernel
 * name, so the capture left is the last launch's, whose buffers lie past
 * the earlier launches' in the region. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 1000;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) {
    x[i] = i;
    y[i] = 0;
  }
  for (int step = 0; step < 3; step++) {
#pragma omp target teams distribute parallel for map(to : x[0:n]) map(tofrom : y[0:n])
    for (int i = 0; i < n; i++)
      y[i] += x[i] + step;
  }
  printf("%f\n", y[n - 1]);
  return 0;
}
