/*
 * A CUDA driver API program linked with -lcuda whose allocations grow past
 * what a recording region maps at first: it allocates the sizes CHUNKS
 * lists (KiB, comma-separated, each at least 128; default
 * "8192,4096,4096") with cuMemAlloc, fills allocation i with the 32-bit
 * word 0x1000 + i (cuMemsetD32), puts saxpy's x at the start of the first
 * allocation and y at the end of the last, launches saxpy three times on a
 * stream of its own, and checks the result (linked.c's `result` line) and
 * that the middle word of every allocation still holds its pattern
 * (`allocations N, MiB M, patterns ok`). Usage as linked.c.
 */
#include "driver.h"

CUresult cuInit(unsigned flags);
CUresult cuDeviceGet(CUdevice *dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleUnload(CUmodule module);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule module,
                             const char *name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
                              CUmodule module, const char *name);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t n);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuStreamCreate(CUstream *stream, unsigned flags);
CUresult cuStreamDestroy_v2(CUstream stream);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params,
                        void **extra);

#define MAX_ALLOCS 64

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s saxpy.ptx [exit-status]\n", argv[0]);
    return 2;
  }
  const char *list = getenv("CHUNKS");
  if (!list || !*list)
    list = "8192,4096,4096";
  size_t sizes[MAX_ALLOCS];
  int count = 0;
  for (const char *p = list; *p && count < MAX_ALLOCS;) {
    char *end;
    unsigned long long kib = strtoull(p, &end, 10);
    if (end == p || kib < 128) {
      fprintf(stderr, "CHUNKS=%s: sizes of at least 128 KiB, please\n", list);
      return 2;
    }
    sizes[count++] = (size_t)kib << 10;
    p = *end == ',' ? end + 1 : end;
  }
  char *ptx = read_file(argv[1]);
  static float x[N], y0[N], y[N];
  inputs(x, y0);

  CUdevice dev;
  CUcontext ctx;
  CUmodule module;
  CUfunction saxpy;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));

  CUdeviceptr d[MAX_ALLOCS];
  size_t total = 0;
  for (int i = 0; i < count; i++) {
    CHECK(cuMemAlloc_v2(&d[i], sizes[i]));
    CHECK(cuMemsetD32_v2(d[i], 0x1000u + (unsigned)i, sizes[i] / 4));
    total += sizes[i];
  }
  CUdeviceptr dx = d[0];
  CUdeviceptr dy = (d[count - 1] + sizes[count - 1] - sizeof y0) & ~255ull;
  CHECK(cuMemcpyHtoD_v2(dx, x, sizeof x));
  CHECK(cuMemcpyHtoD_v2(dy, y0, sizeof y0));

  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  int n = N;
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &dx, &dy, &n};
    CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         stream, params, NULL));
  }
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(y, dy, sizeof y));

  int bad = 0;
  for (int i = 0; i < count; i++) {
    unsigned word = 0;
    CHECK(cuMemcpyDtoH_v2(&word, d[i] + sizes[i] / 2, sizeof word));
    if (word != 0x1000u + (unsigned)i) {
      fprintf(stderr, "allocation %d holds %#x, want %#x\n", i, word,
              0x1000u + (unsigned)i);
      bad = 1;
    }
  }

  CUdeviceptr dlaunches;
  size_t size;
  unsigned launches = 0;
  CHECK(cuModuleGetGlobal_v2(&dlaunches, &size, module, "launches"));
  CHECK(cuMemcpyDtoH_v2(&launches, dlaunches, sizeof launches));

  CHECK(cuStreamDestroy_v2(stream));
  for (int i = 0; i < count; i++)
    CHECK(cuMemFree_v2(d[i]));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  int status = check(x, y0, y, launches);
  printf("allocations %d, MiB %zu, patterns %s\n", count, total >> 20,
         bad ? "BAD" : "ok");
  return exit_status(argc, argv, status | bad);
}
