/* A kernel that reads through a pointer to the host's stack, as a lambda
 * capturing a local by reference does: a struct holding the address of a
 * local array is mapped (its bytes copied as they are), and the kernel
 * follows it. It runs while recording (the host plugin shares the
 * process's memory); replayed in another process, the address holds
 * nothing. The buffers are mapped first (x at the region's base), then a
 * larger array the kernel does not take, so several region bases remain
 * possible for the capture. */
#include <stdio.h>
#include <stdlib.h>

struct view {
  const int *p;
};

int main(void) {
  int n = 1000, big = 1 << 18;
  int local[4] = {1, 2, 3, 4};
  struct view v = {local};
  float *x = malloc(n * sizeof(float));
  float *later = calloc(big, sizeof(float));
  for (int i = 0; i < n; i++)
    x[i] = i;
#pragma omp target enter data map(to : x[0:n], v)
#pragma omp target enter data map(to : later[0:big])
#pragma omp target teams distribute parallel for map(tofrom : x[0:n]) map(to : v)
  for (int i = 0; i < n; i++)
    x[i] += v.p[i % 4];
#pragma omp target exit data map(from : x[0:n]) map(delete : v, later[0:big])
  printf("%f\n", x[n - 1]);
  free(later);
  free(x);
  return 0;
}
