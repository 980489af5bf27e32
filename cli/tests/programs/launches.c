/*
 * A CUDA driver API program linked with -lcuda that launches saxpy many
 * times: LAUNCHES launches (default 200) of y = 1.0 * x + y + 0.5 over
 * ELEMENTS floats (default 16384) on a stream of its own, beside an
 * allocation of UNTOUCHED_KIB KiB (default 192) that it fills once
 * (cuMemsetD32) and no kernel touches. It copies y back, checks it and the
 * module's `launches` global against the host's computation (every value
 * is exact in a float), checks the untouched allocation's middle word, and
 * prints `result <sum of y>` and `launches <n>`. Exits 1 when something is
 * wrong, else with argv[2] (default 0). Usage as linked.c.
 */
#include "driver.h"

static long env_or(const char *name, long fallback) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : fallback;
}

int main(int argc, char **argv) {
  long count = env_or("LAUNCHES", 200);
  long n = env_or("ELEMENTS", 16384);
  long untouched = env_or("UNTOUCHED_KIB", 192) << 10;
  if (count < 0 || n < 1 || n > (1 << 24) || untouched < 4) {
    fprintf(stderr, "LAUNCHES, ELEMENTS or UNTOUCHED_KIB out of range\n");
    return 2;
  }
  char *ptx = saxpy_ptx(argc, argv);
  CUcontext ctx;
  CUdevice dev = open_device(&ctx);
  CUfunction fn;
  CUmodule module = load_saxpy(ptx, &fn);
  size_t bytes = (size_t)n * sizeof(float);
  float *x = malloc(bytes), *y0 = malloc(bytes), *y = malloc(bytes);
  if (!x || !y0 || !y) {
    fprintf(stderr, "out of memory\n");
    return 2;
  }
  for (long i = 0; i < n; i++) {
    x[i] = (float)(i % 4096) * 0.25f;
    y0[i] = 1.0f + (float)(i % 7);
  }
  CUdeviceptr dx, dy, du;
  CHECK(cuMemAlloc_v2(&dx, bytes));
  CHECK(cuMemAlloc_v2(&dy, bytes));
  CHECK(cuMemAlloc_v2(&du, (size_t)untouched));
  CHECK(cuMemsetD32_v2(du, 0x5eed, (size_t)untouched / 4));
  CHECK(cuMemcpyHtoD_v2(dx, x, bytes));
  CHECK(cuMemcpyHtoD_v2(dy, y0, bytes));
  CUstream stream = new_stream();
  float a = 1.0f;
  int ni = (int)n;
  for (long k = 0; k < count; k++) {
    void *params[] = {&a, &dx, &dy, &ni};
    CHECK(cuLaunchKernel(fn, (unsigned)((n + BLOCK - 1) / BLOCK), 1, 1, BLOCK,
                         1, 1, 0, stream, params, NULL));
  }
  CHECK(cuMemcpyDtoHAsync_v2(y, dy, bytes, stream));
  CHECK(cuStreamSynchronize(stream));
  unsigned mid = 0;
  CHECK(cuMemcpyDtoH_v2(&mid, du + (size_t)untouched / 2, sizeof mid));
  unsigned launches = read_launches(module);
  int bad = 0;
  double sum = 0;
  for (long i = 0; i < n; i++) {
    float want = y0[i];
    for (long k = 0; k < count; k++)
      want = a * x[i] + want + 0.5f;
    if (y[i] != want && bad++ < 5)
      fprintf(stderr, "y[%ld] = %g, want %g\n", i, y[i], want);
    sum += y[i];
  }
  if (launches != (unsigned)count) {
    fprintf(stderr, "launches = %u, want %ld\n", launches, count);
    bad++;
  }
  if (mid != 0x5eed) {
    fprintf(stderr, "the untouched allocation holds %#x\n", mid);
    bad++;
  }
  printf("result %.6f\nlaunches %u\n", sum, launches);
  fflush(stdout);
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(dx));
  CHECK(cuMemFree_v2(dy));
  CHECK(cuMemFree_v2(du));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  free(x);
  free(y0);
  free(y);
  return exit_status(argc, argv, bad ? 1 : 0);
}
