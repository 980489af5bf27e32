/* y = scale * x + y on the offload device; `scale` is a `declare target`
 * global the application never changes. */
#include <stdio.h>
#include <stdlib.h>

#pragma omp declare target
float scale = 2.0f;
#pragma omp end declare target

int main(void) {
  int n = 1024;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) {
    x[i] = i;
    y[i] = 1000 - i;
  }
#pragma omp target teams distribute parallel for map(to : x[0:n]) map(tofrom : y[0:n])
  for (int i = 0; i < n; i++)
    y[i] = scale * x[i] + y[i];
  printf("%f %f\n", y[1], y[n - 1]);
  return 0;
}
