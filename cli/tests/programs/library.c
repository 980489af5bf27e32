/*
 * A CUDA driver API program linked with -lcuda that loads its kernel as
 * CUDA 12's runtime does, through a library (cuLibraryLoadData,
 * cuLibraryGetKernel, cuKernelGetFunction), and allocates stream-ordered
 * (cuMemAllocAsync / cuMemFreeAsync). Launches saxpy three ways: the
 * CUfunction, the CUkernel passed as a CUfunction (which the driver
 * accepts), and cuLaunchKernelEx. Then linked.c's check and `result`
 * line. Usage as linked.c. With LIBRARY_ENUMERATE=1 in the environment it
 * never names the kernel: it takes the library's only kernel from
 * cuLibraryEnumerateKernels (CUDA 12.4), as generated code may. With
 * LIBRARY_BEFORE_CONTEXT=1 it loads the library before any context is
 * current (CUDA 12's context-independent loading).
 */
#include "driver.h"

/* As cuda.h declares them (driver.h has the rest). */
CUresult cuLibraryLoadData(CUlibrary *library, const void *code,
                           int *jitOptions, void **jitOptionsValues,
                           unsigned numJitOptions, int *libraryOptions,
                           void **libraryOptionValues,
                           unsigned numLibraryOptions);
CUresult cuKernelGetFunction(CUfunction *f, CUkernel kernel);
CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned n,
                                   CUlibrary library);
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytes, CUstream stream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream);
CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                          void **params, void **extra);

int main(int argc, char **argv) {
  char *ptx = saxpy_ptx(argc, argv);
  static float x[N], y0[N], y[N];
  inputs(x, y0);

  CUdevice dev;
  CUcontext ctx;
  CUlibrary library;
  CUkernel kernel;
  CUfunction saxpy;
  const char *early = getenv("LIBRARY_BEFORE_CONTEXT");
  int before_context = early && strcmp(early, "1") == 0;
  CHECK(cuInit(0));
  if (before_context)
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  if (!before_context)
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0));
  const char *enumerate = getenv("LIBRARY_ENUMERATE");
  if (enumerate && strcmp(enumerate, "1") == 0)
    CHECK(cuLibraryEnumerateKernels(&kernel, 1, library));
  else
    CHECK(cuLibraryGetKernel(&kernel, library, "saxpy"));
  CHECK(cuKernelGetFunction(&saxpy, kernel));

  CUstream stream = new_stream();
  CUdeviceptr dx, dy;
  CHECK(cuMemAllocAsync(&dx, sizeof x, stream));
  CHECK(cuMemAllocAsync(&dy, sizeof y0, stream));
  CHECK(cuMemcpyHtoDAsync_v2(dx, x, sizeof x, stream));
  CHECK(cuMemcpyHtoDAsync_v2(dy, y0, sizeof y0, stream));

  int n = N;
  unsigned grid = (N + BLOCK - 1) / BLOCK;
  void *params[3][4];
  float a[3];
  for (int k = 0; k < 3; k++) {
    a[k] = A[k];
    params[k][0] = &a[k];
    params[k][1] = &dx;
    params[k][2] = &dy;
    params[k][3] = &n;
  }
  CHECK(cuLaunchKernel(saxpy, grid, 1, 1, BLOCK, 1, 1, 0, stream, params[0],
                       NULL));
  CHECK(cuLaunchKernel((CUfunction)kernel, grid, 1, 1, BLOCK, 1, 1, 0, stream,
                       params[1], NULL));
  CUlaunchConfig config = {grid, 1, 1, BLOCK, 1, 1, 0, stream, NULL, 0};
  CHECK(cuLaunchKernelEx(&config, saxpy, params[2], NULL));
  CHECK(cuMemcpyDtoHAsync_v2(y, dy, sizeof y, stream));
  CHECK(cuMemFreeAsync(dx, stream));
  CHECK(cuMemFreeAsync(dy, stream));
  CHECK(cuStreamSynchronize(stream));

  CUdeviceptr dlaunches;
  size_t size;
  unsigned launches = 0;
  CHECK(cuLibraryGetGlobal(&dlaunches, &size, library, "launches"));
  CHECK(cuMemcpyDtoH_v2(&launches, dlaunches, sizeof launches));

  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuLibraryUnload(library));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  return exit_status(argc, argv, check(x, y0, y, launches));
}
