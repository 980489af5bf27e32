/*
 * Pool allocations and the table of memory the simulated GPU may reach.
 *
 * Every pool allocation is a fresh mmap (page-aligned, zeroed). Device
 * pool memory is GPU-accessible from the start; host pool memory (the
 * kernarg and fine-grained pools) only once hsa_amd_agents_allow_access
 * named the GPU for it. vmem mappings (vmem.c) enter the table when
 * hsa_amd_vmem_set_access gives the GPU access. Kernels and copies check
 * every access against this table.
 */
#include "core.h"
#include "memory.h"

#include <stdlib.h>
#include <sys/mman.h>

struct range {
  uint64_t base, size;
  enum sim_mem_kind kind;
  bool gpu;
  uint32_t perms;
};

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct range *ranges;
static size_t nranges, capranges;

void sim_mem_add(uint64_t base, uint64_t size, enum sim_mem_kind kind,
                 bool gpu, uint32_t perms) {
  pthread_mutex_lock(&mem_mu);
  if (nranges == capranges) {
    capranges = capranges ? capranges * 2 : 64;
    ranges = realloc(ranges, capranges * sizeof *ranges);
    if (!ranges) sim_abort("out of memory");
  }
  ranges[nranges++] = (struct range){base, size, kind, gpu, perms};
  pthread_mutex_unlock(&mem_mu);
}

/* The index of the range of `kind` starting at `base` (mem_mu held). */
static long find_base(uint64_t base, int kind) {
  for (size_t i = 0; i < nranges; i++)
    if (ranges[i].base == base && (kind < 0 || ranges[i].kind == (unsigned)kind))
      return (long)i;
  return -1;
}

bool sim_mem_remove(uint64_t base, enum sim_mem_kind kind) {
  pthread_mutex_lock(&mem_mu);
  long i = find_base(base, (int)kind);
  if (i >= 0) ranges[i] = ranges[--nranges];
  pthread_mutex_unlock(&mem_mu);
  return i >= 0;
}

/* The range holding all of [addr, addr+len) (mem_mu held). */
static struct range *containing(uint64_t addr, uint64_t len) {
  if (addr + len < addr) return NULL;
  for (size_t i = 0; i < nranges; i++) {
    struct range *r = &ranges[i];
    if (addr >= r->base && addr + len <= r->base + r->size) return r;
  }
  return NULL;
}

bool sim_gpu_can(uint64_t addr, uint64_t len, bool write) {
  pthread_mutex_lock(&mem_mu);
  struct range *r = containing(addr, len ? len : 1);
  bool ok = r && r->gpu &&
            (r->perms & (write ? HSA_ACCESS_PERMISSION_WO
                               : HSA_ACCESS_PERMISSION_RO));
  pthread_mutex_unlock(&mem_mu);
  return ok;
}

bool sim_gpu_host(uint64_t addr, uint64_t len) {
  pthread_mutex_lock(&mem_mu);
  struct range *r = containing(addr, len ? len : 1);
  bool ok = r && r->gpu && r->kind == SIM_MEM_HOST;
  pthread_mutex_unlock(&mem_mu);
  return ok;
}

long sim_mem_count(enum sim_mem_kind kind) {
  pthread_mutex_lock(&mem_mu);
  long n = 0;
  for (size_t i = 0; i < nranges; i++) n += ranges[i].kind == kind;
  pthread_mutex_unlock(&mem_mu);
  return n;
}

static size_t round_page(size_t n) {
  return (n + SIM_PAGE - 1) / SIM_PAGE * SIM_PAGE;
}

static void *map_fresh(size_t size) {
  void *p = mmap(NULL, round_page(size), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void *sim_device_alloc(size_t size) {
  void *p = map_fresh(size);
  if (p)
    sim_mem_add((uint64_t)p, round_page(size), SIM_MEM_DEVICE, true,
                HSA_ACCESS_PERMISSION_RW);
  return p;
}

void sim_device_free(void *p) {
  pthread_mutex_lock(&mem_mu);
  long i = find_base((uint64_t)p, SIM_MEM_DEVICE);
  if (i < 0) sim_abort("freeing %p, not an internal device allocation", p);
  size_t size = ranges[i].size;
  ranges[i] = ranges[--nranges];
  pthread_mutex_unlock(&mem_mu);
  munmap(p, size);
}

EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool,
                                                 size_t size, uint32_t flags,
                                                 void **ptr) {
  SIM_ENTER("hsa_amd_memory_pool_allocate");
  (void)flags;
  enum sim_mem_kind kind;
  switch (pool.handle) {
    case SIM_POOL_DEVICE:
      if (!sim_gpu_present()) return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
      kind = SIM_MEM_DEVICE;
      break;
    case SIM_POOL_KERNARG:
    case SIM_POOL_HOST:
      kind = SIM_MEM_HOST;
      break;
    default:
      return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  }
  if (!ptr || size == 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (size > ((size_t)64 << 30)) return HSA_STATUS_ERROR_INVALID_ALLOCATION;
  void *p = map_fresh(size);
  if (!p) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  sim_mem_add((uint64_t)p, round_page(size), kind, kind == SIM_MEM_DEVICE,
              HSA_ACCESS_PERMISSION_RW);
  *ptr = p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_free(void *ptr) {
  SIM_ENTER("hsa_amd_memory_pool_free");
  pthread_mutex_lock(&mem_mu);
  long i = find_base((uint64_t)ptr, -1);
  if (i < 0 || ranges[i].kind == SIM_MEM_VMEM) {
    pthread_mutex_unlock(&mem_mu);
    return HSA_STATUS_ERROR_INVALID_ALLOCATION;
  }
  size_t size = ranges[i].size;
  ranges[i] = ranges[--nranges];
  pthread_mutex_unlock(&mem_mu);
  munmap(ptr, size);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t num_agents,
                                                const hsa_agent_t *agents,
                                                const uint32_t *flags,
                                                const void *ptr) {
  SIM_ENTER("hsa_amd_agents_allow_access");
  if (num_agents == 0 || !agents || flags)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  bool gpu = false;
  for (uint32_t i = 0; i < num_agents; i++) {
    if (!sim_agent_valid(agents[i])) return HSA_STATUS_ERROR_INVALID_AGENT;
    gpu |= agents[i].handle == SIM_GPU_AGENT;
  }
  pthread_mutex_lock(&mem_mu);
  long i = find_base((uint64_t)ptr, -1);
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  if (i < 0 || ranges[i].kind == SIM_MEM_VMEM)
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  else if (gpu)
    ranges[i].gpu = true;
  pthread_mutex_unlock(&mem_mu);
  return rc;
}
