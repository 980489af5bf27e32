/* One kernel launched several times, its buffers whole pages (1024 floats):
 * the last launch's pointers then lie at a page + 0x10 past the earlier
 * launches' buffers, as the region base does. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 1024;
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
