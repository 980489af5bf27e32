/*
 * A CUDA driver API program whose memory looks like a real application's:
 *
 *   churn saxpy.ptx loop ITERATIONS
 *     allocates a 2 MiB temporary every iteration, copies x into it,
 *     launches saxpy(a, temporary, y, n) on a stream of its own, waits
 *     for the stream and frees the temporary (cuMemFree);
 *   churn saxpy.ptx big
 *     allocates three 448 MiB buffers (more than 1 GiB together), touches
 *     the first n floats of each, and launches saxpy over the first and
 *     the third, then the second and the third.
 *
 * Either way it copies y back, checks it against the host's computation
 * (every value exact in a float), prints `result <sum of y>` and exits 0,
 * or 1 when y is wrong.
 */
#include "driver.h"

#define SMALL 1024 /* floats the kernel reads and writes */
#define TEMP ((size_t)2 << 20)
#define BIG ((size_t)448 << 20)

static void launch(CUfunction fn, float a, CUdeviceptr dx, CUdeviceptr dy,
                   CUstream stream) {
  int n = SMALL;
  void *params[] = {&a, &dx, &dy, &n};
  CHECK(cuLaunchKernel(fn, (SMALL + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                       stream, params, NULL));
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s saxpy.ptx loop ITERATIONS | big\n", argv[0]);
    return 2;
  }
  char *ptx = read_file(argv[1]);
  static float x[SMALL], y0[SMALL], y[SMALL], want[SMALL];
  for (int i = 0; i < SMALL; i++) {
    x[i] = (float)i * 0.25f;
    y0[i] = 1.0f + (float)(i % 7);
    want[i] = y0[i];
  }
  CUcontext ctx;
  CUdevice dev = open_device(&ctx);
  CUfunction fn;
  CUmodule module = load_saxpy(ptx, &fn);
  CUstream stream = new_stream();
  CUdeviceptr dy;
  CHECK(cuMemAlloc_v2(&dy, sizeof y0));
  CHECK(cuMemcpyHtoD_v2(dy, y0, sizeof y0));
  if (strcmp(argv[2], "loop") == 0 && argc > 3) {
    long iterations = atol(argv[3]);
    for (long it = 0; it < iterations; it++) {
      float a = A[it % 3];
      CUdeviceptr tmp;
      CHECK(cuMemAlloc_v2(&tmp, TEMP));
      CHECK(cuMemcpyHtoD_v2(tmp, x, sizeof x));
      launch(fn, a, tmp, dy, stream);
      CHECK(cuStreamSynchronize(stream));
      CHECK(cuMemFree_v2(tmp));
      for (int i = 0; i < SMALL; i++)
        want[i] = a * x[i] + want[i] + 0.5f;
    }
  } else if (strcmp(argv[2], "big") == 0) {
    CUdeviceptr big[3];
    for (int b = 0; b < 3; b++) {
      CHECK(cuMemAlloc_v2(&big[b], BIG));
      CHECK(cuMemcpyHtoD_v2(big[b], x, sizeof x));
    }
    launch(fn, A[0], big[0], big[2], stream);
    launch(fn, A[1], big[1], dy, stream);
    CHECK(cuStreamSynchronize(stream));
    for (int i = 0; i < SMALL; i++)
      want[i] = A[1] * x[i] + want[i] + 0.5f;
    for (int b = 0; b < 3; b++)
      CHECK(cuMemFree_v2(big[b]));
  } else {
    fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[2]);
    return 2;
  }
  CHECK(cuMemcpyDtoHAsync_v2(y, dy, sizeof y, stream));
  CHECK(cuStreamSynchronize(stream));
  double sum = 0;
  int bad = 0;
  for (int i = 0; i < SMALL; i++) {
    if (y[i] != want[i] && bad++ < 5)
      fprintf(stderr, "y[%d] = %g, want %g\n", i, y[i], want[i]);
    sum += y[i];
  }
  printf("result %.6f\n", sum);
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(dy));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  return bad ? 1 : 0;
}
