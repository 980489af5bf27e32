/*
 * A simulated HSA runtime for testing reprise's AMD executor on machines
 * without an AMD GPU. Built by the tests as `libhsa-runtime64.so.1` and
 * loaded through REPRISE_HSA_LIBRARY; never shipped. See core.c for the
 * overview and the environment switches.
 *
 * This header declares the HSA types and values the simulator implements
 * (copied from hsa.h and hsa_ext_amd.h, which are not included) and the
 * simulated machine's constants: what every source file shares. What a
 * source file defines for the others, its own header declares (core.h for
 * core.c, and so on); a file includes only the headers of the files
 * before it in this list, so that no two files depend on each other:
 *
 *   core, memory, signal, exe, kernels, vmem, copy, queue, loader, live
 */
#ifndef SIM_HSA_H
#define SIM_HSA_H

#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

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

#endif
