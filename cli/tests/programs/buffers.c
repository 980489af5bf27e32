/*
 * A CUDA driver API program with a buffer its kernel never sees: x and y,
 * which saxpy reads and writes, and z (allocated after them, so it lies
 * above y in memory), which the program keeps for itself. Launches saxpy
 * once, reads y back and checks it; prints `result <sum of y>`, exits 1
 * when it is wrong.
 */
#include "driver.h"

int main(int argc, char **argv) {
  struct saxpy s = saxpy_open(argc, argv);
  saxpy_upload(&s);
  static float z[N];
  for (int i = 0; i < N; i++)
    z[i] = -(float)i;
  CUdeviceptr dz;
  CHECK(cuMemAlloc_v2(&dz, sizeof z));
  CHECK(cuMemcpyHtoD_v2(dz, z, sizeof z));
  CUstream stream = new_stream();
  int n = N;
  float a = A[0];
  void *params[] = {&a, &s.dx, &s.dy, &n};
  CHECK(cuLaunchKernel(s.fn, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                       stream, params, NULL));
  CHECK(cuMemcpyDtoHAsync_v2(s.y, s.dy, N * sizeof *s.y, stream));
  CHECK(cuStreamSynchronize(stream));
  int bad = 0;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    float want = A[0] * s.x[i] + s.y0[i] + 0.5f;
    if (s.y[i] != want && bad++ < 5)
      fprintf(stderr, "y[%d] = %g, want %g\n", i, s.y[i], want);
    sum += s.y[i];
  }
  printf("result %.6f\n", sum);
  CHECK(cuMemFree_v2(dz));
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(s.dx));
  CHECK(cuMemFree_v2(s.dy));
  CHECK(cuModuleUnload(s.module));
  CHECK(cuDevicePrimaryCtxRelease_v2(s.dev));
  free(s.ptx);
  return bad ? 1 : 0;
}
