/*
 * Page-locked host memory: allocated (cuMemHostAlloc, cuMemAllocHost) or
 * registered (cuMemHostRegister), and the device pointer of a mapped range
 * (cuMemHostGetDevicePointer).
 *
 * The simulated device has unified addressing (CU_DEVICE_ATTRIBUTE_
 * UNIFIED_ADDRESSING) and uses the host pointer of registered memory
 * (CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM): kernels and
 * copies reach every page-locked range at its host address, which is also
 * the device pointer cuMemHostGetDevicePointer hands out (CUDA Driver API,
 * Memory Management, cuMemAllocHost: the memory is "immediately accessible
 * to all contexts on all devices which support unified addressing" and
 * "the device pointer ... is always equal to the returned host pointer";
 * cuMemHostRegister: "If all devices visible to the application have a
 * non-zero value for the device attribute, the device pointer returned by
 * cuMemHostGetDevicePointer() will match the original pointer"). Write
 * combining is not simulated.
 */
#include "capture.h"
#include "core.h"
#include "errors.h"
#include "host_memory.h"
#include "ranges.h"
#include "stream.h"

/* CU_MEMHOSTALLOC_* and CU_MEMHOSTREGISTER_* (cuda.h). */
#define HOSTALLOC_PORTABLE 0x1
#define HOSTALLOC_DEVICEMAP 0x2
#define HOSTALLOC_WRITECOMBINED 0x4
#define HOSTREGISTER_PORTABLE 0x1
#define HOSTREGISTER_DEVICEMAP 0x2
#define HOSTREGISTER_IOMEMORY 0x4
#define HOSTREGISTER_READ_ONLY 0x8

/* A page-locked range: the flags it was allocated or registered with. */
struct host_block {
  uintptr_t base;
  size_t size;
  unsigned flags;
  int registered; /* cuMemHostRegister's, not the simulator's memory */
};

static struct host_block g_blocks[MAX_RANGES];
int g_nhost;

/* The block holding [base, base + size), or -1 (g_mem held). */
static int block_holding(uintptr_t base, size_t size) {
  for (int i = 0; i < g_nhost; i++)
    if (base >= g_blocks[i].base && size <= g_blocks[i].size &&
        base - g_blocks[i].base <= g_blocks[i].size - size)
      return i;
  return -1;
}

int host_pinned(uintptr_t base, size_t size) {
  pthread_mutex_lock(&g_mem);
  int pinned = block_holding(base, size) >= 0;
  pthread_mutex_unlock(&g_mem);
  return pinned;
}

/* Records [base, base + size) as page-locked, reachable by the device;
 * 0 when there is no room (g_mem held). */
static int add_block(uintptr_t base, size_t size, unsigned flags,
                     int registered) {
  if (g_nhost == MAX_RANGES || !add_range(g_access, &g_naccess, base, size))
    return 0;
  g_blocks[g_nhost++] = (struct host_block){base, size, flags, registered};
  return 1;
}

/* Forgets block `i` (g_mem held). */
static void remove_block(int i) {
  remove_range(g_access, &g_naccess, g_blocks[i].base, g_blocks[i].size);
  g_blocks[i] = g_blocks[--g_nhost];
}

static CUresult host_alloc(void **pp, size_t size, unsigned flags) {
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (r)
    return r;
  if (!pp || size == 0 ||
      (flags & ~(unsigned)(HOSTALLOC_PORTABLE | HOSTALLOC_DEVICEMAP |
                           HOSTALLOC_WRITECOMBINED)))
    return CUDA_ERROR_INVALID_VALUE;
  void *p = NULL;
  if (posix_memalign(&p, 4096, size) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_mem);
  int ok = add_block((uintptr_t)p, size, flags, 0);
  pthread_mutex_unlock(&g_mem);
  if (!ok) {
    free(p);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *pp = p;
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Memory Management, cuMemHostAlloc: CU_MEMHOSTALLOC_
 * PORTABLE, _DEVICEMAP and _WRITECOMBINED; only _DEVICEMAP lets
 * cuMemHostGetDevicePointer answer for it. */
EXPORT CUresult cuMemHostAlloc(void **pp, size_t size, unsigned flags) {
  INJECT();
  return host_alloc(pp, size, flags);
}

/* CUDA Driver API, Memory Management, cuMemAllocHost: cuMemHostAlloc
 * without flags. */
EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size) {
  INJECT();
  return host_alloc(pp, size, 0);
}

/* CUDA Driver API, Memory Management, cuMemFreeHost: memory cuMemHostAlloc
 * or cuMemAllocHost allocated, by its base (registered memory is not
 * freed so: CUDA_ERROR_INVALID_VALUE). */
EXPORT CUresult cuMemFreeHost(void *p) {
  INJECT();
  CUresult r = unsafe_call();
  if (r)
    return r;
  pthread_mutex_lock(&g_mem);
  int i = block_holding((uintptr_t)p, 1);
  size_t size = i >= 0 && g_blocks[i].base == (uintptr_t)p &&
                        !g_blocks[i].registered
                    ? g_blocks[i].size
                    : 0;
  pthread_mutex_unlock(&g_mem);
  if (!size)
    return CUDA_ERROR_INVALID_VALUE;
  check_unused("cuMemFreeHost", (uintptr_t)p, size, 1);
  pthread_mutex_lock(&g_mem);
  i = block_holding((uintptr_t)p, size);
  if (i >= 0)
    remove_block(i);
  pthread_mutex_unlock(&g_mem);
  free(p);
  return CUDA_SUCCESS;
}

/* Whether every page of [p, p + size) is mapped in this process. */
static int host_mapped(void *p, size_t size) {
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t start = (uintptr_t)p & ~(uintptr_t)(page - 1);
  uintptr_t end = (uintptr_t)p + size;
  return end > (uintptr_t)p &&
         msync((void *)start, end - start, MS_ASYNC) == 0;
}

/* CUDA Driver API, Memory Management, cuMemHostRegister: page-locks an
 * existing host range. CU_MEMHOSTREGISTER_READ_ONLY needs
 * CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, which the
 * simulated device lacks, and it has no I/O memory for
 * CU_MEMHOSTREGISTER_IOMEMORY: both CUDA_ERROR_NOT_SUPPORTED. A range
 * overlapping one already page-locked is
 * CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; one not mapped in the
 * process, CUDA_ERROR_INVALID_VALUE. */
EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!p || size == 0 ||
      (flags & ~(unsigned)(HOSTREGISTER_PORTABLE | HOSTREGISTER_DEVICEMAP |
                           HOSTREGISTER_IOMEMORY | HOSTREGISTER_READ_ONLY)))
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & (HOSTREGISTER_IOMEMORY | HOSTREGISTER_READ_ONLY))
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!host_mapped(p, size))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem);
  int taken = 0;
  for (int i = 0; i < g_nhost && !taken; i++)
    taken = (uintptr_t)p < g_blocks[i].base + g_blocks[i].size &&
            g_blocks[i].base < (uintptr_t)p + size;
  int ok = !taken && add_block((uintptr_t)p, size, flags, 1);
  pthread_mutex_unlock(&g_mem);
  if (taken)
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  return ok ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* CUDA Driver API, Memory Management, cuMemHostUnregister: by the base
 * cuMemHostRegister was given; anything else is
 * CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED. */
EXPORT CUresult cuMemHostUnregister(void *p) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&g_mem);
  int i = block_holding((uintptr_t)p, 1);
  size_t size = i >= 0 && g_blocks[i].base == (uintptr_t)p &&
                        g_blocks[i].registered
                    ? g_blocks[i].size
                    : 0;
  pthread_mutex_unlock(&g_mem);
  if (!p || !size)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  check_unused("cuMemHostUnregister", (uintptr_t)p, size, 1);
  pthread_mutex_lock(&g_mem);
  i = block_holding((uintptr_t)p, size);
  if (i >= 0)
    remove_block(i);
  pthread_mutex_unlock(&g_mem);
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Memory Management, cuMemHostGetDevicePointer: the
 * device pointer of a byte of page-locked memory allocated or registered
 * with CU_MEMHOSTALLOC_DEVICEMAP (CU_MEMHOSTREGISTER_DEVICEMAP, the same
 * bit): its host address (see above). `flags` must be 0. */
EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                             unsigned flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!pdptr || !p || flags)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem);
  int i = block_holding((uintptr_t)p, 1);
  int mapped = i >= 0 && (g_blocks[i].flags & HOSTALLOC_DEVICEMAP);
  pthread_mutex_unlock(&g_mem);
  if (!mapped)
    return CUDA_ERROR_INVALID_VALUE;
  *pdptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Memory Management, cuMemHostGetFlags: the flags a
 * page-locked allocation was made with. */
EXPORT CUresult cuMemHostGetFlags(unsigned *flags, void *p) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!flags)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mem);
  int i = block_holding((uintptr_t)p, 1);
  int found = i >= 0 && !g_blocks[i].registered;
  if (found)
    *flags = g_blocks[i].flags;
  pthread_mutex_unlock(&g_mem);
  return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
