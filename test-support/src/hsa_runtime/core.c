/*
 * A simulated HSA runtime (`libhsa-runtime64.so.1`) for testing reprise's
 * AMD executor without a GPU. It implements the entry points the executor
 * calls, with the semantics it relies on, on host memory:
 *
 *  - core.c: hsa_init / hsa_shut_down (counted), status strings, agents
 *    (a CPU, agent 1, and a GPU, agent 2), the GPU's ISA, memory pools,
 *    fault injection, hsa_init's count for tests;
 *  - memory.c: pool allocations (mmap'd) and the table of memory the GPU
 *    may reach (device memory; host memory once
 *    hsa_amd_agents_allow_access named the GPU; vmem mappings once
 *    hsa_amd_vmem_set_access gave the GPU access);
 *  - vmem.c: hsa_amd_vmem_* (reservations with mmap, handles as memfds);
 *  - signal.c: signals, waits, asynchronous handlers (one thread);
 *  - queue.c: AQL queues, one packet processor thread each (kernel
 *    dispatch and barrier-AND packets, errors to the queue's callback);
 *  - copy.c: hsa_amd_memory_async_copy (one copy thread, in order);
 *  - loader.c: code object readers, executables (ELF64 AMDGPU code
 *    objects: PT_LOAD segments into device memory, .dynsym symbols);
 *  - exe.c: the table of executables the loader fills, where the packet
 *    processor finds a dispatch's kernel and a kernel its variables;
 *  - kernels.c: the fixtures' kernels as C, every access checked;
 *  - live.c: what is live, for tests (sim_hsa_live).
 *
 * Misuse the real runtime would punish unpredictably (an unknown or
 * destroyed signal, destroying a signal with a handler registered,
 * destroying an executable a dispatch still uses) aborts with a message.
 *
 * Environment (read by the first hsa_init):
 *   REPRISE_SIM_HSA_INIT=<hex>      hsa_init fails with that status
 *                                   (read at every hsa_init)
 *   REPRISE_SIM_HSA_GFX=gfxNNN      the GPU's name (default gfx90a)
 *   REPRISE_SIM_HSA_NO_GPU=1        report only the CPU agent
 *   REPRISE_SIM_HSA_VMEM=ignored    address reservations ignore the hint
 *   REPRISE_SIM_HSA_COPY_DELAY_US=N a random delay of up to N us before
 *                                   each asynchronous copy
 *   REPRISE_SIM_HSA_FAIL=<fn>:<n>   the n-th call (from 1) of entry point
 *                                   <fn> returns
 *                                   HSA_STATUS_ERROR_OUT_OF_RESOURCES
 *
 * Built with -DSIM_NO_VMEM it lacks the hsa_amd_vmem_* entry points, as a
 * runtime before ROCm 6 does.
 */
#include "core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t init_mu = PTHREAD_MUTEX_INITIALIZER;
static int init_count;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static bool no_gpu;
static char gpu_name[64] = "gfx90a";
static unsigned gpu_mach = 0x3f;
bool sim_vmem_ignore_hints;
unsigned sim_copy_delay_us;
static char fail_fn[128];
static long fail_at;
static long fail_calls;

void sim_abort(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "simulated HSA runtime: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  fflush(stderr);
  abort();
}

/* EF_AMDGPU_MACH_* of LLVM's ELF.h for the processors the simulator
 * knows. */
static const struct { const char *name; unsigned mach; } machs[] = {
    {"gfx900", 0x2c},  {"gfx906", 0x2f},  {"gfx908", 0x30},
    {"gfx90a", 0x3f},  {"gfx940", 0x40},  {"gfx941", 0x4b},
    {"gfx942", 0x4c},  {"gfx1030", 0x36}, {"gfx1100", 0x41},
};

static void read_env(void) {
  const char *g = getenv("REPRISE_SIM_HSA_GFX");
  if (g && *g) {
    bool known = false;
    for (size_t i = 0; i < sizeof machs / sizeof machs[0]; i++)
      if (strcmp(machs[i].name, g) == 0) {
        gpu_mach = machs[i].mach;
        known = true;
      }
    if (!known) sim_abort("REPRISE_SIM_HSA_GFX=%s: an unknown processor", g);
    snprintf(gpu_name, sizeof gpu_name, "%s", g);
  }
  const char *n = getenv("REPRISE_SIM_HSA_NO_GPU");
  no_gpu = n && strcmp(n, "1") == 0;
  const char *v = getenv("REPRISE_SIM_HSA_VMEM");
  sim_vmem_ignore_hints = v && strcmp(v, "ignored") == 0;
  const char *d = getenv("REPRISE_SIM_HSA_COPY_DELAY_US");
  if (d) sim_copy_delay_us = (unsigned)strtoul(d, NULL, 10);
  const char *f = getenv("REPRISE_SIM_HSA_FAIL");
  if (f) {
    const char *colon = strrchr(f, ':');
    if (!colon || colon == f || (size_t)(colon - f) >= sizeof fail_fn)
      sim_abort("REPRISE_SIM_HSA_FAIL=%s: want <function>:<n>", f);
    memcpy(fail_fn, f, (size_t)(colon - f));
    fail_at = strtol(colon + 1, NULL, 10);
    if (fail_at < 1) sim_abort("REPRISE_SIM_HSA_FAIL=%s: n counts from 1", f);
  }
}

bool sim_should_fail(const char *fn) {
  if (!fail_fn[0] || strcmp(fn, fail_fn) != 0) return false;
  return __atomic_add_fetch(&fail_calls, 1, __ATOMIC_RELAXED) == fail_at;
}

bool sim_initialised(void) {
  return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE) > 0;
}

bool sim_gpu_present(void) { return !no_gpu; }
const char *sim_gpu_name(void) { return gpu_name; }
unsigned sim_gpu_mach(void) { return gpu_mach; }

bool sim_agent_valid(hsa_agent_t a) {
  return a.handle == SIM_CPU_AGENT || (a.handle == SIM_GPU_AGENT && !no_gpu);
}

EXPORT hsa_status_t hsa_init(void) {
  pthread_once(&env_once, read_env);
  const char *s = getenv("REPRISE_SIM_HSA_INIT");
  if (s && *s) return (hsa_status_t)strtoul(s, NULL, 16);
  if (sim_should_fail("hsa_init")) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  pthread_mutex_lock(&init_mu);
  __atomic_add_fetch(&init_count, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&init_mu);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down(void) {
  pthread_mutex_lock(&init_mu);
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  if (init_count == 0)
    rc = HSA_STATUS_ERROR_NOT_INITIALIZED;
  else
    __atomic_sub_fetch(&init_count, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&init_mu);
  return rc;
}

EXPORT int sim_hsa_init_count(void) {
  return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE);
}

static const struct { hsa_status_t status; const char *text; } strings[] = {
    {0x0, "HSA_STATUS_SUCCESS: The function has been executed successfully."},
    {0x1, "HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been "
          "interrupted by the application before completing."},
    {0x1000, "HSA_STATUS_ERROR: A generic error has occurred."},
    {0x1001, "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments "
             "does not meet a precondition stated in the documentation of "
             "the corresponding formal argument."},
    {0x1002, "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue "
             "creation is not valid."},
    {0x1003, "HSA_STATUS_ERROR_INVALID_ALLOCATION: The requested allocation "
             "is not valid."},
    {0x1004, "HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid."},
    {0x1006, "HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid."},
    {0x1007, "HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid."},
    {0x1008, "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to "
             "allocate the necessary resources."},
    {0x1009, "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: The AQL packet is "
             "malformed."},
    {0x100A, "HSA_STATUS_ERROR_RESOURCE_FREE: An error has been detected "
             "while releasing a resource."},
    {0x100B, "HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init "
             "has been invoked while the reference count of the HSA runtime "
             "is zero."},
    {0x100F, "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture "
             "is invalid."},
    {0x1010, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is "
             "invalid."},
    {0x1011, "HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is "
             "invalid."},
    {0x1012, "HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen."},
    {0x1013, "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: There is no symbol with "
             "the given name."},
    {0x1019, "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable "
             "symbol is invalid."},
    {0x1021, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: The code object "
             "reader is invalid."},
    {40, "HSA_STATUS_ERROR_INVALID_MEMORY_POOL: The memory pool is invalid."},
    {41, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to "
         "access memory beyond the largest legal address."},
    {42, "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: The agent executed an "
         "illegal shader instruction."},
};

EXPORT hsa_status_t hsa_status_string(hsa_status_t status,
                                      const char **string) {
  if (!string) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
    if (strings[i].status == status) {
      *string = strings[i].text;
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* ---- agents ---- */

EXPORT hsa_status_t hsa_iterate_agents(
    hsa_status_t (*callback)(hsa_agent_t, void *), void *data) {
  SIM_ENTER("hsa_iterate_agents");
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  hsa_status_t rc = callback((hsa_agent_t){SIM_CPU_AGENT}, data);
  if (rc != HSA_STATUS_SUCCESS) return rc;
  if (!no_gpu) return callback((hsa_agent_t){SIM_GPU_AGENT}, data);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t agent, uint32_t attribute,
                                       void *value) {
  SIM_ENTER("hsa_agent_get_info");
  if (!sim_agent_valid(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  bool gpu = agent.handle == SIM_GPU_AGENT;
  switch (attribute) {
    case HSA_AGENT_INFO_NAME:
      memset(value, 0, 64);
      snprintf(value, 64, "%s", gpu ? gpu_name : "Sim CPU");
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_VENDOR_NAME:
      memset(value, 0, 64);
      snprintf(value, 64, "%s", gpu ? "AMD" : "CPU");
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_DEVICE:
      *(uint32_t *)value = gpu ? HSA_DEVICE_TYPE_GPU : HSA_DEVICE_TYPE_CPU;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_MIN_SIZE:
      *(uint32_t *)value = gpu ? 64 : 0;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE:
      *(uint32_t *)value = gpu ? SIM_QUEUE_MAX : 0;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WAVEFRONT_SIZE:
      *(uint32_t *)value = gpu ? 64 : 0;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE:
      *(uint32_t *)value = gpu ? 1024 : 0;
      return HSA_STATUS_SUCCESS;
    case HSA_AGENT_INFO_WORKGROUP_MAX_DIM: {
      uint16_t *d = value;
      d[0] = d[1] = d[2] = gpu ? 1024 : 0;
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_GRID_MAX_DIM: {
      uint32_t *d = value;
      d[0] = d[1] = d[2] = gpu ? 0xffffffffu : 0;
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_ISA:
      ((hsa_isa_t *)value)->handle = gpu ? SIM_ISA : 0;
      return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_agent_iterate_isas(
    hsa_agent_t agent, hsa_status_t (*callback)(hsa_isa_t, void *),
    void *data) {
  SIM_ENTER("hsa_agent_iterate_isas");
  if (!sim_agent_valid(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (agent.handle != SIM_GPU_AGENT) return HSA_STATUS_SUCCESS;
  return callback((hsa_isa_t){SIM_ISA}, data);
}

static void isa_name(char *out, size_t cap) {
  if (strcmp(gpu_name, "gfx90a") == 0)
    snprintf(out, cap, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  else
    snprintf(out, cap, "amdgcn-amd-amdhsa--%s", gpu_name);
}

EXPORT hsa_status_t hsa_isa_get_info_alt(hsa_isa_t isa, uint32_t attribute,
                                         void *value) {
  SIM_ENTER("hsa_isa_get_info_alt");
  if (isa.handle != SIM_ISA || no_gpu) return HSA_STATUS_ERROR_INVALID_ISA;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  char name[128];
  isa_name(name, sizeof name);
  switch (attribute) {
    case HSA_ISA_INFO_NAME_LENGTH:
      *(uint32_t *)value = (uint32_t)strlen(name) + 1;
      return HSA_STATUS_SUCCESS;
    case HSA_ISA_INFO_NAME:
      memcpy(value, name, strlen(name) + 1);
      return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

/* ---- pools ---- */

EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(
    hsa_agent_t agent, hsa_status_t (*callback)(hsa_amd_memory_pool_t, void *),
    void *data) {
  SIM_ENTER("hsa_amd_agent_iterate_memory_pools");
  if (!sim_agent_valid(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (agent.handle == SIM_GPU_AGENT)
    return callback((hsa_amd_memory_pool_t){SIM_POOL_DEVICE}, data);
  /* The kernarg pool first, as on a real machine. */
  hsa_status_t rc = callback((hsa_amd_memory_pool_t){SIM_POOL_KERNARG}, data);
  if (rc != HSA_STATUS_SUCCESS) return rc;
  return callback((hsa_amd_memory_pool_t){SIM_POOL_HOST}, data);
}

EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool,
                                                 uint32_t attribute,
                                                 void *value) {
  SIM_ENTER("hsa_amd_memory_pool_get_info");
  uint32_t flags;
  switch (pool.handle) {
    case SIM_POOL_DEVICE:
      if (no_gpu) return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
      flags = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED;
      break;
    case SIM_POOL_KERNARG:
      flags = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT |
              HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
      break;
    case SIM_POOL_HOST:
      flags = HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED;
      break;
    default:
      return HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
  }
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (attribute) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
      *(uint32_t *)value = HSA_AMD_SEGMENT_GLOBAL;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
      *(uint32_t *)value = flags;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE:
    case HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE:
      *(size_t *)value = (size_t)64 << 30;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
      *(bool *)value = true;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE:
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT:
      *(size_t *)value = SIM_PAGE;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL:
      *(bool *)value = false;
      return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}
