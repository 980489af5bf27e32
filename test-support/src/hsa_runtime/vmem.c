/*
 * Virtual memory management (hsa_amd_vmem_*, ROCm 6 and later; left out
 * with -DSIM_NO_VMEM): reservations are PROT_NONE address space (at the
 * hint when it is free, unless REPRISE_SIM_HSA_VMEM=ignored), handles are
 * memfds of device memory, mappings map a handle into a reservation
 * without access until hsa_amd_vmem_set_access, which (for the GPU agent)
 * enters the mapping in the table kernels and copies check.
 */
#include "core.h"
#include "memory.h"
#include "vmem.h"

#include <string.h>

#ifdef SIM_NO_VMEM

long sim_vmem_count(const char *what) {
  (void)what;
  return 0;
}

#else

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define HANDLE_BASE 0x7600000000ull

struct reservation { uint64_t base, size; };
struct vhandle { bool live; int fd; uint64_t size; long maps; };
struct mapping { uint64_t va, size, handle; uint32_t gpu_perms; };

static pthread_mutex_t vmem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct reservation res[256];
static size_t nres;
static struct vhandle *handles;
static size_t nhandles, caphandles;
static long live_handles;
static struct mapping maps[1024];
static size_t nmaps;

long sim_vmem_count(const char *what) {
  pthread_mutex_lock(&vmem_mu);
  long n = strcmp(what, "reservations") == 0 ? (long)nres
           : strcmp(what, "handles") == 0    ? live_handles
                                             : (long)nmaps;
  pthread_mutex_unlock(&vmem_mu);
  return n;
}

static bool paged(uint64_t v) { return v % SIM_PAGE == 0; }

static void *reserve_anywhere(size_t size) {
  void *p = mmap(NULL, size, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

EXPORT hsa_status_t hsa_amd_vmem_address_reserve(void **va, size_t size,
                                                 uint64_t address,
                                                 uint64_t flags) {
  SIM_ENTER("hsa_amd_vmem_address_reserve");
  (void)flags;
  if (!va || size == 0 || !paged(size)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  void *p = NULL;
  if (address && paged(address) && !sim_vmem_ignore_hints) {
    p = mmap((void *)address, size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
             -1, 0);
    if (p == MAP_FAILED) p = NULL;
    /* A kernel without MAP_FIXED_NOREPLACE takes it as a hint: whatever it
     * gave is "elsewhere", as the runtime's answer to a taken hint. */
  }
  if (!p) p = reserve_anywhere(size);
  if (p && sim_vmem_ignore_hints && (uint64_t)p == address) {
    void *q = reserve_anywhere(size);
    munmap(p, size);
    p = q;
  }
  if (!p) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  pthread_mutex_lock(&vmem_mu);
  if (nres == sizeof res / sizeof res[0]) {
    pthread_mutex_unlock(&vmem_mu);
    munmap(p, size);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  res[nres++] = (struct reservation){(uint64_t)p, size};
  pthread_mutex_unlock(&vmem_mu);
  *va = p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_vmem_address_free(void *va, size_t size) {
  SIM_ENTER("hsa_amd_vmem_address_free");
  uint64_t base = (uint64_t)va;
  pthread_mutex_lock(&vmem_mu);
  size_t i = 0;
  while (i < nres && !(res[i].base == base && res[i].size == size)) i++;
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  if (i == nres) {
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  } else {
    for (size_t m = 0; m < nmaps; m++)
      if (maps[m].va >= base && maps[m].va < base + size)
        rc = HSA_STATUS_ERROR_RESOURCE_FREE;
    if (rc == HSA_STATUS_SUCCESS) {
      res[i] = res[--nres];
      munmap(va, size);
    }
  }
  pthread_mutex_unlock(&vmem_mu);
  return rc;
}

EXPORT hsa_status_t hsa_amd_vmem_handle_create(
    hsa_amd_memory_pool_t pool, size_t size, hsa_amd_memory_type_t type,
    uint64_t flags, hsa_amd_vmem_alloc_handle_t *handle) {
  SIM_ENTER("hsa_amd_vmem_handle_create");
  (void)flags;
  if (pool.handle != SIM_POOL_DEVICE || !sim_gpu_present())
    return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  if (!handle || size == 0 || !paged(size) || type > 1)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  int fd = memfd_create("sim-hsa-vmem", MFD_CLOEXEC);
  if (fd < 0) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (ftruncate(fd, (off_t)size) != 0) {
    close(fd);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  pthread_mutex_lock(&vmem_mu);
  if (nhandles == caphandles) {
    caphandles = caphandles ? caphandles * 2 : 64;
    handles = realloc(handles, caphandles * sizeof *handles);
    if (!handles) sim_abort("out of memory");
  }
  handles[nhandles] = (struct vhandle){true, fd, size, 0};
  handle->handle = HANDLE_BASE + nhandles++;
  live_handles++;
  pthread_mutex_unlock(&vmem_mu);
  return HSA_STATUS_SUCCESS;
}

/* The live handle behind `h` (vmem_mu held), or NULL. */
static struct vhandle *find_handle(hsa_amd_vmem_alloc_handle_t h) {
  uint64_t i = h.handle - HANDLE_BASE;
  if (h.handle < HANDLE_BASE || i >= nhandles || !handles[i].live) return NULL;
  return &handles[i];
}

EXPORT hsa_status_t hsa_amd_vmem_handle_release(
    hsa_amd_vmem_alloc_handle_t handle) {
  SIM_ENTER("hsa_amd_vmem_handle_release");
  pthread_mutex_lock(&vmem_mu);
  struct vhandle *h = find_handle(handle);
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  if (!h) {
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  } else if (h->maps > 0) {
    rc = HSA_STATUS_ERROR_RESOURCE_FREE;
  } else {
    close(h->fd);
    h->live = false;
    live_handles--;
  }
  pthread_mutex_unlock(&vmem_mu);
  return rc;
}

EXPORT hsa_status_t hsa_amd_vmem_map(void *va, size_t size, size_t in_offset,
                                     hsa_amd_vmem_alloc_handle_t handle,
                                     uint64_t flags) {
  SIM_ENTER("hsa_amd_vmem_map");
  (void)flags;
  uint64_t base = (uint64_t)va;
  if (size == 0 || !paged(size) || !paged(base) || !paged(in_offset))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&vmem_mu);
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  struct vhandle *h = find_handle(handle);
  bool inside = false;
  for (size_t i = 0; i < nres; i++)
    inside |= base >= res[i].base && base + size <= res[i].base + res[i].size;
  bool overlaps = false;
  for (size_t m = 0; m < nmaps; m++)
    overlaps |= base < maps[m].va + maps[m].size && maps[m].va < base + size;
  if (!h || in_offset + size > h->size || !inside || overlaps ||
      nmaps == sizeof maps / sizeof maps[0]) {
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  } else if (mmap(va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd,
                  (off_t)in_offset) == MAP_FAILED) {
    rc = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  } else {
    h->maps++;
    maps[nmaps++] = (struct mapping){base, size, handle.handle, 0};
  }
  pthread_mutex_unlock(&vmem_mu);
  return rc;
}

EXPORT hsa_status_t hsa_amd_vmem_unmap(void *va, size_t size) {
  SIM_ENTER("hsa_amd_vmem_unmap");
  uint64_t base = (uint64_t)va;
  pthread_mutex_lock(&vmem_mu);
  size_t m = 0;
  while (m < nmaps && !(maps[m].va == base && maps[m].size == size)) m++;
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  if (m == nmaps) {
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  } else {
    if (maps[m].gpu_perms) sim_mem_remove(base, SIM_MEM_VMEM);
    /* Back to bare reserved address space. */
    if (mmap(va, size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1,
             0) == MAP_FAILED)
      sim_abort("hsa_amd_vmem_unmap: cannot restore the reservation");
    struct vhandle *h = find_handle((hsa_amd_vmem_alloc_handle_t){maps[m].handle});
    if (h) h->maps--;
    maps[m] = maps[--nmaps];
  }
  pthread_mutex_unlock(&vmem_mu);
  return rc;
}

/* The whole range must be one mapping (as the executor sets it). */
EXPORT hsa_status_t hsa_amd_vmem_set_access(
    void *va, size_t size, const hsa_amd_memory_access_desc_t *desc,
    size_t desc_cnt) {
  SIM_ENTER("hsa_amd_vmem_set_access");
  if (!desc || desc_cnt == 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  uint32_t gpu = 0, any = 0;
  for (size_t i = 0; i < desc_cnt; i++) {
    if (!sim_agent_valid(desc[i].agent_handle))
      return HSA_STATUS_ERROR_INVALID_AGENT;
    if (desc[i].permissions > HSA_ACCESS_PERMISSION_RW)
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    any |= desc[i].permissions;
    if (desc[i].agent_handle.handle == SIM_GPU_AGENT) gpu = desc[i].permissions;
  }
  uint64_t base = (uint64_t)va;
  pthread_mutex_lock(&vmem_mu);
  size_t m = 0;
  while (m < nmaps && !(maps[m].va == base && maps[m].size == size)) m++;
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  if (m == nmaps) {
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  } else {
    /* The simulator's own threads do the GPU's accesses. */
    mprotect(va, size, any ? PROT_READ | PROT_WRITE : PROT_NONE);
    if (maps[m].gpu_perms) sim_mem_remove(base, SIM_MEM_VMEM);
    maps[m].gpu_perms = gpu;
    if (gpu) sim_mem_add(base, size, SIM_MEM_VMEM, true, gpu);
  }
  pthread_mutex_unlock(&vmem_mu);
  return rc;
}

#endif
