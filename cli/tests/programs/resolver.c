/*
 * A CUDA driver API program that reaches the driver as CUDA's runtime
 * does: not linked with it, it dlopens libcuda.so.1, dlsyms only
 * cuDriverGetVersion and cuGetProcAddress_v2, asks that resolver for
 * cuGetProcAddress itself, and resolves every other entry point by base
 * name at CUDA 12.0 (cuLaunchKernel with the per-thread default stream
 * flag, which hands out cuLaunchKernel_ptsz). Then makes linked.c's
 * computation and prints the same `result` line. Usage as linked.c.
 */
#include <dlfcn.h>

#include "driver.h"

typedef CUresult (*GetProcAddress)(const char *symbol, void **pfn,
                                   int cudaVersion, cuuint64_t flags,
                                   CUdriverProcAddressQueryResult *status);

static GetProcAddress get_proc;

/* Entry point `name` at CUDA 12.0 with `flags`, or exits. */
static void *resolve(const char *name, cuuint64_t flags) {
  void *p = NULL;
  CUdriverProcAddressQueryResult status = -1;
  CUresult r = get_proc(name, &p, 12000, flags, &status);
  if (r != CUDA_SUCCESS || !p || status != CU_GET_PROC_ADDRESS_SUCCESS) {
    fprintf(stderr, "cuGetProcAddress_v2(%s): %d, status %d\n", name, r,
            status);
    exit(2);
  }
  return p;
}

#define RESOLVE(var, name) var = resolve(name, CU_GET_PROC_ADDRESS_DEFAULT)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s saxpy.ptx [exit-status]\n", argv[0]);
    return 2;
  }
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen(libcuda.so.1): %s\n", dlerror());
    return 2;
  }
  CUresult (*driver_version)(int *) = (CUresult(*)(int *))dlsym(
      lib, "cuDriverGetVersion");
  GetProcAddress first = (GetProcAddress)dlsym(lib, "cuGetProcAddress_v2");
  if (!driver_version || !first) {
    fprintf(stderr, "libcuda.so.1 lacks its entry points\n");
    return 2;
  }
  int version = 0;
  CHECK(driver_version(&version));
  if (version < 12000) {
    fprintf(stderr, "driver version %d, want 12.0 or later\n", version);
    return 2;
  }
  /* As the runtime does: the resolver resolved by itself. */
  get_proc = first;
  get_proc = (GetProcAddress)resolve("cuGetProcAddress",
                                     CU_GET_PROC_ADDRESS_DEFAULT);
  /* An unknown name is not found. */
  void *none = (void *)1;
  CUdriverProcAddressQueryResult status = -1;
  if (get_proc("cuNoSuchFunction", &none, 12000, 0, &status) !=
          CUDA_ERROR_NOT_FOUND ||
      none || status != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) {
    fprintf(stderr, "cuGetProcAddress_v2 found cuNoSuchFunction\n");
    return 2;
  }

  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule,
                                const char *);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
  RESOLVE(cuInit, "cuInit");
  RESOLVE(cuDeviceGet, "cuDeviceGet");
  RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  RESOLVE(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
  RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent");
  RESOLVE(cuModuleLoadData, "cuModuleLoadData");
  RESOLVE(cuModuleUnload, "cuModuleUnload");
  RESOLVE(cuModuleGetFunction, "cuModuleGetFunction");
  RESOLVE(cuModuleGetGlobal, "cuModuleGetGlobal");
  RESOLVE(cuMemAlloc, "cuMemAlloc");
  RESOLVE(cuMemFree, "cuMemFree");
  RESOLVE(cuMemcpyHtoD, "cuMemcpyHtoD");
  RESOLVE(cuMemcpyDtoH, "cuMemcpyDtoH");
  RESOLVE(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync");
  RESOLVE(cuStreamCreate, "cuStreamCreate");
  RESOLVE(cuStreamDestroy, "cuStreamDestroy");
  RESOLVE(cuStreamSynchronize, "cuStreamSynchronize");
  cuLaunchKernel =
      resolve("cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  if ((void *)cuLaunchKernel != dlsym(lib, "cuLaunchKernel_ptsz")) {
    fprintf(stderr, "cuLaunchKernel per thread is not cuLaunchKernel_ptsz\n");
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
  CHECK(cuMemAlloc(&dx, sizeof x));
  CHECK(cuMemAlloc(&dy, sizeof y0));
  CHECK(cuMemcpyHtoD(dx, x, sizeof x));
  CHECK(cuMemcpyHtoD(dy, y0, sizeof y0));

  CUstream stream;
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  int n = N;
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &dx, &dy, &n};
    CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         stream, params, NULL));
  }
  CHECK(cuMemcpyDtoHAsync(y, dy, sizeof y, stream));
  CHECK(cuStreamSynchronize(stream));

  CUdeviceptr dlaunches;
  size_t size;
  unsigned launches = 0;
  CHECK(cuModuleGetGlobal(&dlaunches, &size, module, "launches"));
  CHECK(cuMemcpyDtoH(&launches, dlaunches, sizeof launches));

  CHECK(cuStreamDestroy(stream));
  CHECK(cuMemFree(dx));
  CHECK(cuMemFree(dy));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease(dev));
  free(ptx);
  return exit_status(argc, argv, check(x, y0, y, launches));
}
