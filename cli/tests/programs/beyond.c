/*
 * Memory beyond the device allocations a kernel reads and writes, as real
 * programs use it: saxpy's y in managed memory (argv[2] "managed"), in
 * page-locked host memory mapped for the device ("hostalloc"), in a
 * malloc'd buffer registered for the device ("register"), or allocated
 * from a memory pool on a stream ("pool"). The host changes y between
 * the three launches, as a program updating its data between steps does.
 * Prints the result line; exits 1 when a value is wrong.
 */
#include <stdint.h>

#include "driver.h"

typedef struct CUmemPoolHandle_st *CUmemoryPool;
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x02

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned flags);
CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned flags);
CUresult cuMemFreeHost(void *p);
CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p,
                                      unsigned flags);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes,
                                 CUmemoryPool pool, CUstream stream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream);

#define BYTES (N * sizeof(float))

int main(int argc, char **argv) {
  char *ptx = saxpy_ptx(argc, argv);
  const char *mode = argc > 2 ? argv[2] : "managed";
  CUcontext ctx;
  CUdevice dev = open_device(&ctx);
  CUfunction saxpy;
  CUmodule module = load_saxpy(ptx, &saxpy);
  CUstream stream = new_stream();

  static float x[N], y0[N], want[N], got[N];
  inputs(x, y0);
  CUdeviceptr dx;
  CHECK(cuMemAlloc_v2(&dx, BYTES));
  CHECK(cuMemcpyHtoD_v2(dx, x, BYTES));

  /* y: where the host reads and writes it (NULL for pool memory, which
   * it reaches by copies only), and where the device does. */
  float *hy = NULL;
  void *registered = NULL;
  CUdeviceptr dy = 0;
  if (!strcmp(mode, "managed")) {
    CHECK(cuMemAllocManaged(&dy, BYTES, CU_MEM_ATTACH_GLOBAL));
    hy = (float *)(uintptr_t)dy;
  } else if (!strcmp(mode, "hostalloc")) {
    CHECK(cuMemHostAlloc((void **)&hy, BYTES, CU_MEMHOSTALLOC_DEVICEMAP));
    CHECK(cuMemHostGetDevicePointer_v2(&dy, hy, 0));
  } else if (!strcmp(mode, "register")) {
    registered = malloc(BYTES + 4096);
    hy = (float *)(((uintptr_t)registered + 4095) & ~(uintptr_t)4095);
    CHECK(cuMemHostRegister_v2(hy, BYTES, CU_MEMHOSTREGISTER_DEVICEMAP));
    CHECK(cuMemHostGetDevicePointer_v2(&dy, hy, 0));
  } else if (!strcmp(mode, "pool")) {
    CUmemoryPool pool;
    CHECK(cuDeviceGetDefaultMemPool(&pool, dev));
    CHECK(cuMemAllocFromPoolAsync(&dy, BYTES, pool, stream));
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }

  memcpy(want, y0, BYTES);
  if (hy)
    memcpy(hy, y0, BYTES);
  else
    CHECK(cuMemcpyHtoDAsync_v2(dy, y0, BYTES, stream));
  int n = N;
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &dx, &dy, &n};
    CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         stream, params, NULL));
    CHECK(cuStreamSynchronize(stream));
    for (int i = 0; i < N; i++)
      want[i] = a * x[i] + want[i] + 0.5f;
    /* The host's step between launches: every tenth value moves on. */
    if (hy) {
      for (int i = 0; i < N; i += 10)
        hy[i] += (float)(k + 1);
    } else {
      CHECK(cuMemcpyDtoH_v2(got, dy, BYTES));
      for (int i = 0; i < N; i += 10)
        got[i] += (float)(k + 1);
      CHECK(cuMemcpyHtoDAsync_v2(dy, got, BYTES, stream));
    }
    for (int i = 0; i < N; i += 10)
      want[i] += (float)(k + 1);
  }
  CHECK(cuStreamSynchronize(stream));
  if (hy)
    memcpy(got, hy, BYTES);
  else
    CHECK(cuMemcpyDtoH_v2(got, dy, BYTES));
  int bad = 0;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    if (got[i] != want[i] && bad++ < 5)
      fprintf(stderr, "y[%d] = %g, want %g\n", i, got[i], want[i]);
    sum += got[i];
  }
  unsigned launches = read_launches(module);
  if (launches != 3) {
    fprintf(stderr, "launches = %u, want 3\n", launches);
    bad++;
  }
  printf("result %.6f\n", sum);
  fflush(stdout);

  if (!strcmp(mode, "managed"))
    CHECK(cuMemFree_v2(dy));
  else if (!strcmp(mode, "hostalloc"))
    CHECK(cuMemFreeHost(hy));
  else if (!strcmp(mode, "register")) {
    CHECK(cuMemHostUnregister(hy));
    free(registered);
  } else
    CHECK(cuMemFreeAsync(dy, stream));
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemFree_v2(dx));
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  return bad ? 1 : 0;
}
