/* num_teams and thread_limit over large mappings (4 MiB each). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 1 << 20;
  float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) {
    x[i] = i % 13;
    y[i] = 2;
  }
#pragma omp target teams distribute parallel for num_teams(8) thread_limit(128) map(to : x[0:n]) map(tofrom : y[0:n])
  for (int i = 0; i < n; i++)
    y[i] = y[i] * x[i] + 1;
  printf("%f\n", y[n - 1]);
  return 0;
}
