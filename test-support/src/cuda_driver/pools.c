/*
 * Memory pools of the stream-ordered allocator (each device's default
 * pool, pools cuMemPoolCreate makes, cuMemAllocFromPoolAsync) and
 * cuMemPrefetchAsync. A pool's allocations are memory.c's stream-ordered
 * ones: allocated at the call, freed by cuMemFreeAsync when the stream
 * reaches it (or by cuMemFree).
 */
#include "core.h"
#include "errors.h"
#include "memory.h"

/* CUmemAllocationType, CUmemLocationType, CUmemAllocationHandleType
 * (cuda.h). */
#define ALLOCATION_TYPE_PINNED 1
#define LOCATION_TYPE_DEVICE 1
#define LOCATION_TYPE_HOST 2
#define LOCATION_TYPE_HOST_NUMA 3
#define LOCATION_TYPE_HOST_NUMA_CURRENT 4
#define HANDLE_TYPE_POSIX_FD 0x1
/* CU_DEVICE_CPU. */
#define DEVICE_CPU (-1)

typedef struct {
  int type;
  int id;
} CUmemLocation;

/* CUmemPoolProps, as cuda.h (CUDA 12) lays it out. */
typedef struct {
  int allocType;
  int handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
} CUmemPoolProps;

struct sim_pool {
  CUdevice device;
  struct sim_pool *next; /* in g_pools */
};
typedef struct sim_pool *CUmemoryPool;

static pthread_mutex_t g_pools_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_pool g_default_pools[MAX_DEVICES];
/* The pools cuMemPoolCreate made and cuMemPoolDestroy has not destroyed. */
static struct sim_pool *g_pools;

/* Whether `pool` is a pool: a device's default one, or a live one. */
static int pool_live(CUmemoryPool pool) {
  if (pool >= g_default_pools && pool < g_default_pools + g_devices)
    return 1;
  pthread_mutex_lock(&g_pools_lock);
  int live = 0;
  for (struct sim_pool *p = g_pools; p && !live; p = p->next)
    live = p == pool;
  pthread_mutex_unlock(&g_pools_lock);
  return live;
}

/* CUDA Driver API, Device Management, cuDeviceGetDefaultMemPool. */
EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  if (dev < 0 || dev >= g_devices)
    return CUDA_ERROR_INVALID_DEVICE;
  g_default_pools[dev].device = dev;
  *out = &g_default_pools[dev];
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Stream Ordered Memory Allocator, cuMemPoolCreate: a
 * pool of pinned device memory of a device (CU_MEM_ALLOCATION_TYPE_PINNED,
 * CU_MEM_LOCATION_TYPE_DEVICE with a valid ordinal), shareable through no
 * handle or a POSIX file descriptor. Host and managed pools came with
 * later drivers than the one simulated (CUDA_ERROR_NOT_SUPPORTED). */
EXPORT CUresult cuMemPoolCreate(CUmemoryPool *out,
                                const CUmemPoolProps *props) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!out || !props || props->allocType != ALLOCATION_TYPE_PINNED ||
      (props->handleTypes & ~HANDLE_TYPE_POSIX_FD))
    return CUDA_ERROR_INVALID_VALUE;
  switch (props->location.type) {
  case LOCATION_TYPE_DEVICE:
    if (props->location.id < 0 || props->location.id >= g_devices)
      return CUDA_ERROR_INVALID_VALUE;
    break;
  case LOCATION_TYPE_HOST:
  case LOCATION_TYPE_HOST_NUMA:
  case LOCATION_TYPE_HOST_NUMA_CURRENT:
    return CUDA_ERROR_NOT_SUPPORTED;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  struct sim_pool *p = calloc(1, sizeof *p);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  p->device = props->location.id;
  pthread_mutex_lock(&g_pools_lock);
  p->next = g_pools;
  g_pools = p;
  pthread_mutex_unlock(&g_pools_lock);
  *out = p;
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Stream Ordered Memory Allocator, cuMemPoolDestroy: not
 * a device's default pool (CUDA_ERROR_INVALID_VALUE); allocations still
 * outstanding stay usable until freed ("the resources associated with the
 * pool will be released automatically once there are no more outstanding
 * allocations"). */
EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_pools_lock);
  struct sim_pool **p = &g_pools;
  while (*p && *p != pool)
    p = &(*p)->next;
  struct sim_pool *found = *p;
  if (found)
    *p = found->next;
  pthread_mutex_unlock(&g_pools_lock);
  if (!found)
    return CUDA_ERROR_INVALID_VALUE;
  free(found);
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Stream Ordered Memory Allocator, cuMemPoolTrimTo: the
 * simulator's pools keep no memory beyond their allocations, so there is
 * nothing to release. */
EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  INJECT();
  (void)keep;
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  return pool_live(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* CUDA Driver API, Stream Ordered Memory Allocator,
 * cuMemAllocFromPoolAsync: as cuMemAllocAsync, from `pool`. */
static CUresult alloc_from_pool(CUdeviceptr *out, size_t size,
                                CUmemoryPool pool, CUstream s,
                                int per_thread) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!out || size == 0 || !pool_live(pool))
    return CUDA_ERROR_INVALID_VALUE;
  return mem_alloc_async(out, size, s, per_thread);
}

EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *out, size_t size,
                                        CUmemoryPool pool, CUstream s) {
  INJECT();
  return alloc_from_pool(out, size, pool, s, 0);
}

EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *out, size_t size,
                                             CUmemoryPool pool, CUstream s) {
  INJECT();
  return alloc_from_pool(out, size, pool, s, 1);
}

/* CUDA Driver API, Unified Addressing, cuMemPrefetchAsync: the range must
 * be managed memory (CUDA_ERROR_INVALID_VALUE otherwise), the destination
 * a device or the host. The simulator's managed memory is where the host
 * and every device read it already, so nothing moves: "this API is not
 * required for functionality and only serves to improve performance". */
static CUresult prefetch(CUdeviceptr ptr, size_t count, CUmemLocation to,
                         unsigned flags) {
  CUresult r = usable();
  if (r)
    return r;
  if (flags || count == 0 || !managed_range((uintptr_t)ptr, count))
    return CUDA_ERROR_INVALID_VALUE;
  switch (to.type) {
  case LOCATION_TYPE_DEVICE:
    return to.id >= 0 && to.id < g_devices ? CUDA_SUCCESS
                                            : CUDA_ERROR_INVALID_DEVICE;
  case LOCATION_TYPE_HOST:
  case LOCATION_TYPE_HOST_NUMA_CURRENT:
    return CUDA_SUCCESS;
  case LOCATION_TYPE_HOST_NUMA:
    return to.id >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
}

/* CUDA 8's form: a device ordinal, or CU_DEVICE_CPU for the host. */
static CUresult prefetch_to_device(CUdeviceptr ptr, size_t count,
                                   CUdevice dev) {
  CUmemLocation to = {LOCATION_TYPE_DEVICE, dev};
  if (dev == DEVICE_CPU)
    to.type = LOCATION_TYPE_HOST;
  return prefetch(ptr, count, to, 0);
}

EXPORT CUresult cuMemPrefetchAsync(CUdeviceptr ptr, size_t count,
                                   CUdevice dev, CUstream s) {
  INJECT();
  (void)s;
  return prefetch_to_device(ptr, count, dev);
}

EXPORT CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr ptr, size_t count,
                                        CUdevice dev, CUstream s) {
  INJECT();
  (void)s;
  return prefetch_to_device(ptr, count, dev);
}

/* CUDA 12.2's form, with a CUmemLocation and flags (0). */
EXPORT CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count,
                                      CUmemLocation to, unsigned flags,
                                      CUstream s) {
  INJECT();
  (void)s;
  return prefetch(ptr, count, to, flags);
}

EXPORT CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr ptr, size_t count,
                                           CUmemLocation to, unsigned flags,
                                           CUstream s) {
  INJECT();
  (void)s;
  return prefetch(ptr, count, to, flags);
}
