/*
 * A CUDA driver API program linked with -lcuda that makes launches the
 * driver refuses, then good ones: saxpy with a block of 2048 threads
 * (past the device's 1024: CUDA_ERROR_INVALID_VALUE), then with 1 MiB of
 * dynamic shared memory (past what the function may have:
 * CUDA_ERROR_INVALID_VALUE), each checked for the driver's error and
 * reported (`refused 2048 threads: 1`, `refused 1 MiB shared: 1`), then
 * linked.c's three launches, check and `result` line. Usage as linked.c.
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
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuStreamCreate(CUstream *stream, unsigned flags);
CUresult cuStreamDestroy_v2(CUstream stream);
CUresult cuStreamSynchronize(CUstream stream);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params,
                        void **extra);

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s saxpy.ptx [exit-status]\n", argv[0]);
    return 2;
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

  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc_v2(&dx, sizeof x));
  CHECK(cuMemAlloc_v2(&dy, sizeof y0));
  CHECK(cuMemcpyHtoD_v2(dx, x, sizeof x));
  CHECK(cuMemcpyHtoD_v2(dy, y0, sizeof y0));

  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  int n = N;
  float a0 = 100.0f;
  void *bad_params[] = {&a0, &dx, &dy, &n};
  CUresult r = cuLaunchKernel(saxpy, (N + 2047) / 2048, 1, 1, 2048, 1, 1, 0,
                              stream, bad_params, NULL);
  printf("refused 2048 threads: %d\n", r);
  r = cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1,
                     1u << 20, stream, bad_params, NULL);
  printf("refused 1 MiB shared: %d\n", r);
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &dx, &dy, &n};
    CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         stream, params, NULL));
  }
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(y, dy, sizeof y));

  CUdeviceptr dlaunches;
  size_t size;
  unsigned launches = 0;
  CHECK(cuModuleGetGlobal_v2(&dlaunches, &size, module, "launches"));
  CHECK(cuMemcpyDtoH_v2(&launches, dlaunches, sizeof launches));

  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(dx));
  CHECK(cuMemFree_v2(dy));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  return exit_status(argc, argv, check(x, y0, y, launches));
}
