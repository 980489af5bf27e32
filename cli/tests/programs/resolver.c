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

/* driver.h's entry points as pointers, resolved here. */
#define DRIVER_RESOLVED
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

  /* By base name: the variables have the _v2 names driver.h's helpers
   * call, the versions CUDA 12.0 hands out for these names. */
  RESOLVE(cuInit, "cuInit");
  RESOLVE(cuDeviceGet, "cuDeviceGet");
  RESOLVE(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  RESOLVE(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease");
  RESOLVE(cuCtxSetCurrent, "cuCtxSetCurrent");
  RESOLVE(cuModuleLoadData, "cuModuleLoadData");
  RESOLVE(cuModuleUnload, "cuModuleUnload");
  RESOLVE(cuModuleGetFunction, "cuModuleGetFunction");
  RESOLVE(cuModuleGetGlobal_v2, "cuModuleGetGlobal");
  RESOLVE(cuMemAlloc_v2, "cuMemAlloc");
  RESOLVE(cuMemFree_v2, "cuMemFree");
  RESOLVE(cuMemcpyHtoD_v2, "cuMemcpyHtoD");
  RESOLVE(cuMemcpyDtoH_v2, "cuMemcpyDtoH");
  RESOLVE(cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync");
  RESOLVE(cuStreamCreate, "cuStreamCreate");
  RESOLVE(cuStreamDestroy_v2, "cuStreamDestroy");
  RESOLVE(cuStreamSynchronize, "cuStreamSynchronize");
  cuLaunchKernel =
      resolve("cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
  if ((void *)cuLaunchKernel != dlsym(lib, "cuLaunchKernel_ptsz")) {
    fprintf(stderr, "cuLaunchKernel per thread is not cuLaunchKernel_ptsz\n");
    return 2;
  }

  /* Then linked.c's computation, through the pointers. */
  return saxpy_program(argc, argv);
}
