/* Two kernels over column-major 3-D arrays, each `collapse(3)`: the
 * second maps fresh arrays after the first has run, so its snapshot holds
 * the first one's output at the same offsets, and its own buffers lie
 * past it. */
#include <stdio.h>
#include <stdlib.h>

#define AT(a, i, j, k) a[(i) + nx * ((j) + ny * (k))]

int main(void) {
  int nx = 20, ny = 18, nz = 14;
  int n = nx * ny * nz;
  double *u = malloc(n * sizeof(double)), *v = malloc(n * sizeof(double));
  double *w = malloc(n * sizeof(double)), *f = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) {
    u[i] = i % 7;
    v[i] = 0;
    w[i] = 1.5;
    f[i] = 0;
  }
#pragma omp target teams distribute parallel for collapse(3) map(to : u[0:n]) map(tofrom : v[0:n])
  for (int k = 0; k < nz; k++)
    for (int j = 0; j < ny; j++)
      for (int i = 0; i < nx; i++)
        AT(v, i, j, k) = 2.0 * AT(u, i, j, k) + k;
#pragma omp target teams distribute parallel for collapse(3) map(to : v[0:n], w[0:n]) map(tofrom : f[0:n])
  for (int k = 1; k < nz - 1; k++)
    for (int j = 1; j < ny - 1; j++)
      for (int i = 1; i < nx - 1; i++)
        AT(f, i, j, k) = AT(w, i, j, k) * (AT(v, i - 1, j, k) + AT(v, i + 1, j, k) +
                                           AT(v, i, j - 1, k) + AT(v, i, j + 1, k) +
                                           AT(v, i, j, k - 1) + AT(v, i, j, k + 1));
  printf("%f %f\n", AT(v, 3, 4, 5), AT(f, 3, 4, 5));
  return 0;
}
