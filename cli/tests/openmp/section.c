/* Mapped array sections that start inside their arrays: the kernel gets a
 * pointer below what LLVM allocated (ArgOffsets is negative). */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  int n = 10000;
  double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) {
    a[i] = i;
    b[i] = -1;
  }
#pragma omp target teams distribute parallel for map(to : a[3000:500]) map(tofrom : b[1000:500])
  for (int i = 0; i < 500; i++)
    b[1000 + i] = 2 * a[3000 + i];
  printf("%f %f\n", b[1000], b[1499]);
  return 0;
}
