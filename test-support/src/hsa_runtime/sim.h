/*
 * A simulated HSA runtime for testing reprise's AMD executor on machines
 * without an AMD GPU. Built by the tests as `libhsa-runtime64.so.1` and
 * loaded through REPRISE_HSA_LIBRARY; never shipped. See core.c for the
 * overview and the environment switches.
 *
 * This header declares the HSA types and values the simulator implements
 * (copied from hsa.h and hsa_ext_amd.h, which are not included), and the
 * simulator's internal interfaces between its source files.
 */
#ifndef SIM_HSA_H
#define SIM_HSA_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))
/* The address of the last GPU memory fault (kernels.c). */
extern uint64_t sim_fault_address;

/* ---- HSA types (hsa.h / hsa_ext_amd.h) ---- */

typedef uint32_t hsa_status_t;
typedef int64_t hsa_signal_value_t;
typedef struct { uint64_t handle; } hsa_agent_t;
typedef struct { uint64_t handle; } hsa_signal_t;
typedef struct { uint64_t handle; } hsa_isa_t;
typedef struct { uint64_t handle; } hsa_amd_memory_pool_t;
typedef struct { uint64_t handle; } hsa_code_object_reader_t;
typedef struct { uint64_t handle; } hsa_executable_t;
typedef struct { uint64_t handle; } hsa_executable_symbol_t;
typedef struct { uint64_t handle; } hsa_loaded_code_object_t;
typedef struct { uint64_t handle; } hsa_amd_vmem_alloc_handle_t;
typedef uint32_t hsa_amd_memory_type_t;

typedef struct hsa_queue_s {
  uint32_t type;
  uint32_t features;
  void *base_address;
  hsa_signal_t doorbell_signal;
  uint32_t size;
  uint32_t reserved1;
  uint64_t id;
} hsa_queue_t;

typedef struct {
  uint32_t permissions;
  hsa_agent_t agent_handle;
} hsa_amd_memory_access_desc_t;

typedef bool (*hsa_amd_signal_handler)(hsa_signal_value_t value, void *arg);
typedef void (*sim_queue_callback)(hsa_status_t, hsa_queue_t *, void *);

/* ---- statuses ---- */
#define HSA_STATUS_SUCCESS 0x0
#define HSA_STATUS_INFO_BREAK 0x1
#define HSA_STATUS_ERROR 0x1000
#define HSA_STATUS_ERROR_INVALID_ARGUMENT 0x1001
#define HSA_STATUS_ERROR_INVALID_QUEUE_CREATION 0x1002
#define HSA_STATUS_ERROR_INVALID_ALLOCATION 0x1003
#define HSA_STATUS_ERROR_INVALID_AGENT 0x1004
#define HSA_STATUS_ERROR_INVALID_SIGNAL 0x1006
#define HSA_STATUS_ERROR_INVALID_QUEUE 0x1007
#define HSA_STATUS_ERROR_OUT_OF_RESOURCES 0x1008
#define HSA_STATUS_ERROR_INVALID_PACKET_FORMAT 0x1009
#define HSA_STATUS_ERROR_RESOURCE_FREE 0x100A
#define HSA_STATUS_ERROR_NOT_INITIALIZED 0x100B
#define HSA_STATUS_ERROR_INVALID_ISA 0x100F
#define HSA_STATUS_ERROR_INVALID_CODE_OBJECT 0x1010
#define HSA_STATUS_ERROR_INVALID_EXECUTABLE 0x1011
#define HSA_STATUS_ERROR_FROZEN_EXECUTABLE 0x1012
#define HSA_STATUS_ERROR_INVALID_SYMBOL_NAME 0x1013
#define HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL 0x1019
#define HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER 0x1021
#define HSA_STATUS_ERROR_INVALID_MEMORY_POOL 40
#define HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION 41
#ifndef HSA_STATUS_ERROR_MEMORY_FAULT
#define HSA_STATUS_ERROR_MEMORY_FAULT 43
#endif
#define HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION 42

/* ---- attributes ---- */
#define HSA_AGENT_INFO_NAME 0
#define HSA_AGENT_INFO_VENDOR_NAME 1
#define HSA_AGENT_INFO_WAVEFRONT_SIZE 6
#define HSA_AGENT_INFO_WORKGROUP_MAX_DIM 7
#define HSA_AGENT_INFO_WORKGROUP_MAX_SIZE 8
#define HSA_AGENT_INFO_GRID_MAX_DIM 9
#define HSA_AGENT_INFO_QUEUE_MIN_SIZE 13
#define HSA_AGENT_INFO_QUEUE_MAX_SIZE 14
#define HSA_AGENT_INFO_DEVICE 17
#define HSA_AGENT_INFO_ISA 19
#define HSA_DEVICE_TYPE_CPU 0
#define HSA_DEVICE_TYPE_GPU 1

#define HSA_ISA_INFO_NAME_LENGTH 0
#define HSA_ISA_INFO_NAME 1

#define HSA_AMD_MEMORY_POOL_INFO_SEGMENT 0
#define HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS 1
#define HSA_AMD_MEMORY_POOL_INFO_SIZE 2
#define HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED 5
#define HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE 6
#define HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT 7
#define HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL 15
#define HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE 16
#define HSA_AMD_SEGMENT_GLOBAL 0
#define HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT 1
#define HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED 2
#define HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED 4

#define HSA_SIGNAL_CONDITION_EQ 0
#define HSA_SIGNAL_CONDITION_NE 1
#define HSA_SIGNAL_CONDITION_LT 2
#define HSA_SIGNAL_CONDITION_GTE 3

#define HSA_QUEUE_TYPE_MULTI 0
#define HSA_QUEUE_TYPE_SINGLE 1
#define HSA_QUEUE_FEATURE_KERNEL_DISPATCH 1

#define HSA_PACKET_TYPE_VENDOR_SPECIFIC 0
#define HSA_PACKET_TYPE_INVALID 1
#define HSA_PACKET_TYPE_KERNEL_DISPATCH 2
#define HSA_PACKET_TYPE_BARRIER_AND 3

#define HSA_EXECUTABLE_SYMBOL_INFO_TYPE 0
#define HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH 1
#define HSA_EXECUTABLE_SYMBOL_INFO_NAME 2
#define HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE 9
#define HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE 11
#define HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT 12
#define HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE 13
#define HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE 14
#define HSA_EXECUTABLE_SYMBOL_INFO_AGENT 20
#define HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS 21
#define HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT 22
#define HSA_SYMBOL_KIND_VARIABLE 0
#define HSA_SYMBOL_KIND_KERNEL 1

#define HSA_ACCESS_PERMISSION_NONE 0
#define HSA_ACCESS_PERMISSION_RO 1
#define HSA_ACCESS_PERMISSION_WO 2
#define HSA_ACCESS_PERMISSION_RW 3

/* ---- the simulated machine ---- */
#define SIM_CPU_AGENT 1u
#define SIM_GPU_AGENT 2u
#define SIM_POOL_DEVICE 0x10u
#define SIM_POOL_KERNARG 0x20u
#define SIM_POOL_HOST 0x21u
#define SIM_ISA 0x30u
#define SIM_PAGE 4096u
#define SIM_QUEUE_MAX 4096u

/* Entry points the simulator calls itself. */
EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial,
                                      uint32_t num_consumers,
                                      const hsa_agent_t *consumers,
                                      hsa_signal_t *signal);
EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal);

/* Everything below is internal to the library. */
#pragma GCC visibility push(hidden)

/* ---- core.c: init, fault injection, failing loudly ---- */
bool sim_initialised(void);
/* Whether the current call of `fn` is the one REPRISE_SIM_HSA_FAIL names. */
bool sim_should_fail(const char *fn);
__attribute__((noreturn, format(printf, 1, 2))) void sim_abort(const char *fmt, ...);
bool sim_agent_valid(hsa_agent_t a);
bool sim_gpu_present(void);
const char *sim_gpu_name(void);
unsigned sim_gpu_mach(void);
extern bool sim_vmem_ignore_hints;
extern unsigned sim_copy_delay_us;

/* Every entry point returning a status starts with this. */
#define SIM_ENTER(name)                                                        \
  do {                                                                         \
    if (!sim_initialised()) return HSA_STATUS_ERROR_NOT_INITIALIZED;           \
    if (sim_should_fail(name)) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;       \
  } while (0)

/* ---- memory.c: the table of memory the GPU may reach ---- */
enum sim_mem_kind { SIM_MEM_DEVICE, SIM_MEM_HOST, SIM_MEM_VMEM };
/* Records a range (pool allocations at allocation, vmem mappings at
 * set_access). */
void sim_mem_add(uint64_t base, uint64_t size, enum sim_mem_kind kind,
                 bool gpu, uint32_t perms);
/* Removes the range starting at `base` of `kind`; false if none. */
bool sim_mem_remove(uint64_t base, enum sim_mem_kind kind);
/* Whether [addr, addr+len) lies in one GPU-accessible range allowing
 * `write` (or reading). */
bool sim_gpu_can(uint64_t addr, uint64_t len, bool write);
/* Whether [addr, addr+len) lies in one live host allocation the GPU may
 * reach (kernel arguments). */
bool sim_gpu_host(uint64_t addr, uint64_t len);
/* An internal device allocation (code object segments). */
void *sim_device_alloc(size_t size);
void sim_device_free(void *p);
long sim_mem_count(enum sim_mem_kind kind);

/* ---- vmem.c ---- */
long sim_vmem_count(const char *what);

/* ---- signal.c ---- */
/* The lock and condition every wait on a signal (or a queue's doorbell)
 * uses: broadcast on every signal change. */
extern pthread_mutex_t sim_sig_mu;
extern pthread_cond_t sim_sig_cond;
/* The signal's value (aborts on an unknown handle); with sim_sig_mu held. */
int64_t sim_signal_value_locked(hsa_signal_t s);
/* Adds `delta` to the signal and wakes waiters (aborts when unknown). */
void sim_signal_add(hsa_signal_t s, int64_t delta);
/* Waits (sim_sig_mu held) until `*stop` or 1 ms passed. */
void sim_sig_wait_a_little(void);
long sim_signal_count(void);

long sim_handler_count(void);

/* ---- queue.c ---- */
long sim_queue_count(void);
/* Aborts when a live queue holds a dispatch of a kernel whose descriptor
 * lies in [lo, hi). */
void sim_queue_check_unused(uint64_t lo, uint64_t hi, const char *what);

/* ---- loader.c ---- */
struct sim_exe;
typedef struct sim_item {
  uint64_t gid[3];       /* global work-item id */
  uint32_t grid[3];      /* grid size in work-items */
  const uint8_t *kernarg;
  struct sim_exe *exe;
  uint32_t wg[3];        /* work-group size in work-items */
} sim_item;
/* A kernel's C body: 0, or the status of its fault. */
typedef hsa_status_t (*sim_kernel_fn)(const sim_item *);
struct sim_dispatch_kernel {
  struct sim_exe *exe;
  const char *name;
  sim_kernel_fn fn;  /* NULL: no C implementation */
  uint32_t kernarg_size;
};
/* Finds the kernel whose descriptor is at `object` and marks its
 * executable busy; false if none. */
bool sim_kernel_begin(uint64_t object, struct sim_dispatch_kernel *out);
void sim_kernel_end(struct sim_exe *exe);
/* The address of a variable of the executable (0 if it has none). */
uint64_t sim_exe_var(struct sim_exe *exe, const char *name, uint64_t *size);
long sim_loader_count(const char *what);

/* ---- kernels.c ---- */
sim_kernel_fn sim_kernel_lookup(const char *symbol);

/* ---- copy.c ---- */
long sim_copy_count(void);

#pragma GCC visibility pop

#endif
