/* The application changes a `declare target` global with `target update`
 * before the kernel: LLVM 16 saves no globals, so a replay with the
 * image's initial value computes something else. */
#include <stdio.h>
#include <stdlib.h>

#pragma omp declare target
float scale = 2.0f;
#pragma omp end declare target

int main(void) {
  int n = 256;
  float *y = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++)
    y[i] = i;
  scale = 3.0f;
#pragma omp target update to(scale)
#pragma omp target teams distribute parallel for map(tofrom : y[0:n])
  for (int i = 0; i < n; i++)
    y[i] = scale * y[i];
  printf("%f\n", y[n - 1]);
  return 0;
}
