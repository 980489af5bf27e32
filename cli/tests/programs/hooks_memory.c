/*
 * The memory calls a real CUDA program makes beyond cuMemAlloc, each
 * checked against what NVIDIA's driver API reference says it does:
 *
 *  - page-locked host memory: cuMemHostAlloc (with
 *    CU_MEMHOSTALLOC_DEVICEMAP), cuMemAllocHost_v2, cuMemHostRegister_v2
 *    (with CU_MEMHOSTREGISTER_DEVICEMAP), cuMemHostGetDevicePointer_v2,
 *    cuMemHostUnregister, cuMemFreeHost; saxpy reads x from allocated
 *    mapped memory and updates y in registered memory through their device
 *    pointers, the host changing x between launches;
 *  - cuMemcpy2D_v2 and cuMemcpy2DAsync_v2 between host rows and pitched
 *    device rows, cuMemsetD8_v2 and cuMemsetD8Async;
 *  - memory pools: cuDeviceGetDefaultMemPool, cuMemPoolCreate,
 *    cuMemAllocFromPoolAsync, cuMemPoolTrimTo, cuMemPoolDestroy;
 *  - cuMemAllocManaged and cuMemPrefetchAsync;
 *  - the module loaded with cuModuleLoadFatBinary.
 *
 * Launches: 3 on device memory filled by 2D copies and memsets (plain),
 * 2 on mapped host memory, 1 on pool memory. Prints `hooks_memory: ok`
 * and exits 0 when every check holds, else says what failed and exits 1.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "driver.h"

typedef struct CUmemPool_st *CUmemoryPool;
typedef struct {
  int type;
  int id;
} CUmemLocation;
typedef struct {
  int allocType;
  int handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;
typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
} CUDA_MEMCPY2D;

#define CU_MEMHOSTALLOC_PORTABLE 0x1
#define CU_MEMHOSTALLOC_DEVICEMAP 0x2
#define CU_MEMHOSTREGISTER_DEVICEMAP 0x2
#define CU_MEMORYTYPE_HOST 1
#define CU_MEMORYTYPE_DEVICE 2
#define CU_MEM_ALLOCATION_TYPE_PINNED 1
#define CU_MEM_LOCATION_TYPE_DEVICE 1
#define CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM 91
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice dev);
CUresult cuModuleLoadFatBinary(CUmodule *module, const void *image);
CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned flags);
CUresult cuMemAllocHost_v2(void **pp, size_t bytes);
CUresult cuMemFreeHost(void *p);
CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags);
CUresult cuMemHostUnregister(void *p);
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p,
                                      unsigned flags);
CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *copy);
CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *copy, CUstream stream);
CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n);
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n,
                         CUstream stream);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes,
                              CUstream stream);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props);
CUresult cuMemPoolDestroy(CUmemoryPool pool);
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep);
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytes,
                                 CUmemoryPool pool, CUstream stream);
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream);
CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytes, unsigned flags);
CUresult cuMemPrefetchAsync(CUdeviceptr dptr, size_t bytes, CUdevice dev,
                            CUstream stream);

#define BYTES (N * sizeof(float))
#define GRID ((N + BLOCK - 1) / BLOCK)
/* The 2D copies: ROWS rows of N / ROWS floats, at a device pitch of
 * PITCH bytes and a host pitch of the row itself plus 64. */
#define ROWS 10
#define ROW_BYTES (N / ROWS * sizeof(float))
#define PITCH 40960

static int failures;

/* Counts a failure unless `call` returned `want`. */
#define EXPECT_CODE(call, want)                                                \
  do {                                                                         \
    CUresult r_ = (call);                                                      \
    if (r_ != (want)) {                                                        \
      printf("FAIL: %s returned %d, want %d (line %d)\n", #call, r_,          \
             (want), __LINE__);                                                \
      failures++;                                                              \
    }                                                                          \
  } while (0)
#define EXPECT(call) EXPECT_CODE(call, CUDA_SUCCESS)

static void expect(int ok, const char *what) {
  if (!ok) {
    printf("FAIL: %s\n", what);
    failures++;
  }
}

/* The host's saxpy on its model of y. */
static void host_saxpy(float a, const float *x, float *y) {
  for (int i = 0; i < N; i++)
    y[i] = a * x[i] + y[i] + 0.5f;
}

static void compare(const char *name, const float *got, const float *want) {
  int bad = 0;
  for (int i = 0; i < N; i++)
    if (got[i] != want[i] && bad++ < 3)
      printf("FAIL: %s[%d] = %g, want %g\n", name, i, got[i], want[i]);
  failures += bad > 0;
}

static void launch(CUfunction saxpy, float a, CUdeviceptr x, CUdeviceptr y,
                   CUstream s) {
  int n = N;
  void *params[] = {&a, &x, &y, &n};
  EXPECT(cuLaunchKernel(saxpy, GRID, 1, 1, BLOCK, 1, 1, 0, s, params, NULL));
}

int main(int argc, char **argv) {
  (void)check;
  char *ptx = saxpy_ptx(argc, argv);
  static float x[N], y0[N], want[N], got[N];
  inputs(x, y0);

  CUcontext ctx;
  CUdevice dev = open_device(&ctx);
  CUmodule module;
  CUfunction saxpy;
  CHECK(cuModuleLoadFatBinary(&module, ptx));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CUstream s = new_stream();

  /* 1. Device memory filled by a 2D copy and memsets, read back by a 2D
   * copy: x goes up in ROWS rows of a PITCH-byte pitched buffer and comes
   * back whole; y is set byte by byte to zero, then uploaded. */
  CUdeviceptr pitched, dx, dy;
  CHECK(cuMemAlloc_v2(&pitched, (size_t)PITCH * ROWS));
  CHECK(cuMemAlloc_v2(&dx, BYTES));
  CHECK(cuMemAlloc_v2(&dy, BYTES));
  EXPECT(cuMemsetD8_v2(pitched, 0xff, (size_t)PITCH * ROWS));
  CUDA_MEMCPY2D up = {0};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = x;
  up.srcPitch = ROW_BYTES;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = pitched;
  up.dstPitch = PITCH;
  up.WidthInBytes = ROW_BYTES;
  up.Height = ROWS;
  EXPECT(cuMemcpy2D_v2(&up));
  /* A pitch below the width is refused. */
  CUDA_MEMCPY2D narrow = up;
  narrow.dstPitch = ROW_BYTES - 4;
  EXPECT_CODE(cuMemcpy2D_v2(&narrow), CUDA_ERROR_INVALID_VALUE);
  /* The pitched rows to dx, packed, on the stream. */
  CUDA_MEMCPY2D pack = {0};
  pack.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  pack.srcDevice = pitched;
  pack.srcPitch = PITCH;
  pack.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  pack.dstDevice = dx;
  pack.dstPitch = ROW_BYTES;
  pack.WidthInBytes = ROW_BYTES;
  pack.Height = ROWS;
  EXPECT(cuMemcpy2DAsync_v2(&pack, s));
  EXPECT(cuMemsetD8Async(dy, 0, BYTES, s));
  EXPECT(cuStreamSynchronize(s));
  /* The padding past each row keeps the memset's bytes. */
  unsigned char pad[4];
  CHECK(cuMemcpyDtoH_v2(pad, pitched + ROW_BYTES, sizeof pad));
  expect(pad[0] == 0xff && pad[3] == 0xff, "cuMemsetD8 fills the padding");
  CHECK(cuMemcpyDtoH_v2(got, dy, BYTES));
  for (int i = 0; i < N; i++)
    want[i] = 0;
  compare("memset y", got, want);
  CHECK(cuMemcpyHtoD_v2(dy, y0, BYTES));
  memcpy(want, y0, sizeof want);
  for (int k = 0; k < 3; k++) {
    launch(saxpy, A[k], dx, dy, s);
    host_saxpy(A[k], x, want);
  }
  /* y back through a 2D copy to a host buffer with a wider pitch. */
  static float wide[N + ROWS * 16];
  CUDA_MEMCPY2D down = {0};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = dy;
  down.srcPitch = ROW_BYTES;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = wide;
  down.dstPitch = ROW_BYTES + 64;
  down.WidthInBytes = ROW_BYTES;
  down.Height = ROWS;
  EXPECT(cuMemcpy2DAsync_v2(&down, s));
  EXPECT(cuStreamSynchronize(s));
  for (int r = 0; r < ROWS; r++)
    memcpy(got + r * (N / ROWS), (char *)wide + r * (ROW_BYTES + 64),
           ROW_BYTES);
  compare("2D y", got, want);

  /* 2. Page-locked memory mapped for the device: x allocated, y
   * registered. */
  int same = 0;
  CHECK(cuDeviceGetAttribute(
      &same, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, dev));
  float *hx = NULL;
  EXPECT(cuMemHostAlloc((void **)&hx, BYTES,
                        CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t ybytes = (BYTES + page - 1) / page * page;
  float *hy = mmap(NULL, ybytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (hx == NULL || hy == MAP_FAILED) {
    printf("FAIL: no host memory\n");
    return 1;
  }
  EXPECT(cuMemHostRegister_v2(hy, BYTES, CU_MEMHOSTREGISTER_DEVICEMAP));
  EXPECT_CODE(cuMemHostRegister_v2(hy, BYTES, CU_MEMHOSTREGISTER_DEVICEMAP),
              CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
  CUdeviceptr mx = 0, my = 0, inner = 0;
  EXPECT(cuMemHostGetDevicePointer_v2(&mx, hx, 0));
  EXPECT(cuMemHostGetDevicePointer_v2(&my, hy, 0));
  EXPECT_CODE(cuMemHostGetDevicePointer_v2(&inner, hx, 1),
              CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemHostGetDevicePointer_v2(&inner, hx + 10, 0));
  expect(inner == mx + 10 * sizeof(float), "an inner pointer maps inside");
  if (same)
    expect(mx == (CUdeviceptr)(uintptr_t)hx && my == (CUdeviceptr)(uintptr_t)hy,
           "the device pointers are the host pointers");
  memcpy(hx, x, BYTES);
  memcpy(hy, y0, BYTES);
  memcpy(want, y0, sizeof want);
  launch(saxpy, A[0], mx, my, s);
  EXPECT(cuStreamSynchronize(s));
  host_saxpy(A[0], x, want);
  compare("mapped y", hy, want);
  /* The host changes x between launches; the kernel sees the change. */
  for (int i = 0; i < N; i++)
    hx[i] = x[i] * 2;
  launch(saxpy, A[1], mx, my, s);
  EXPECT(cuStreamSynchronize(s));
  for (int i = 0; i < N; i++)
    got[i] = x[i] * 2;
  host_saxpy(A[1], got, want);
  compare("mapped y after the host's change", hy, want);

  /* Page-locked memory without DEVICEMAP has no device pointer to ask
   * for; it stages an upload. */
  float *staging = NULL;
  EXPECT(cuMemAllocHost_v2((void **)&staging, BYTES));
  if (staging) {
    EXPECT_CODE(cuMemHostGetDevicePointer_v2(&inner, staging, 0),
                CUDA_ERROR_INVALID_VALUE);
    memcpy(staging, y0, BYTES);
    EXPECT(cuMemcpyHtoDAsync_v2(dy, staging, BYTES, s));
    EXPECT(cuStreamSynchronize(s));
    CHECK(cuMemcpyDtoH_v2(got, dy, BYTES));
    compare("staged y", got, y0);
  }

  /* 3. Memory pools. */
  CUmemoryPool pool = NULL, mine = NULL;
  EXPECT(cuDeviceGetDefaultMemPool(&pool, dev));
  CUmemPoolProps props = {0};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = dev;
  EXPECT(cuMemPoolCreate(&mine, &props));
  CUdeviceptr px = 0, py = 0;
  EXPECT(cuMemAllocFromPoolAsync(&px, BYTES, mine, s));
  EXPECT(cuMemAllocFromPoolAsync(&py, BYTES, pool, s));
  EXPECT(cuMemcpyHtoDAsync_v2(px, x, BYTES, s));
  EXPECT(cuMemcpyHtoDAsync_v2(py, y0, BYTES, s));
  launch(saxpy, A[2], px, py, s);
  EXPECT(cuMemcpyDtoHAsync_v2(got, py, BYTES, s));
  EXPECT(cuMemFreeAsync(px, s));
  EXPECT(cuMemFreeAsync(py, s));
  EXPECT(cuStreamSynchronize(s));
  memcpy(want, y0, sizeof want);
  host_saxpy(A[2], x, want);
  compare("pool y", got, want);
  EXPECT(cuMemPoolTrimTo(mine, 0));
  EXPECT_CODE(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuMemPoolDestroy(mine));

  /* 4. Managed memory prefetched to the device; device memory cannot
   * be. */
  CUdeviceptr managed = 0;
  EXPECT(cuMemAllocManaged(&managed, BYTES, CU_MEM_ATTACH_GLOBAL));
  EXPECT(cuMemPrefetchAsync(managed, BYTES, dev, s));
  EXPECT_CODE(cuMemPrefetchAsync(dx, BYTES, dev, s), CUDA_ERROR_INVALID_VALUE);
  EXPECT(cuStreamSynchronize(s));
  EXPECT(cuMemFree_v2(managed));

  /* 5. Letting go: registered memory is unregistered, not freed. */
  EXPECT_CODE(cuMemFreeHost(hy), CUDA_ERROR_INVALID_VALUE);
  EXPECT_CODE(cuMemHostUnregister(hx), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
  EXPECT(cuMemHostUnregister(hy));
  EXPECT(cuMemFreeHost(hx));
  if (staging)
    EXPECT(cuMemFreeHost(staging));
  munmap(hy, ybytes);
  CHECK(cuStreamDestroy_v2(s));
  CHECK(cuMemFree_v2(pitched));
  CHECK(cuMemFree_v2(dx));
  CHECK(cuMemFree_v2(dy));
  CHECK(cuModuleUnload(module));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  if (failures) {
    printf("hooks_memory: %d failed\n", failures);
    return 1;
  }
  printf("hooks_memory: ok\n");
  return 0;
}
