/* memory.c: pool allocations and the table of memory the GPU may reach. */
#ifndef SIM_HSA_MEMORY_H
#define SIM_HSA_MEMORY_H

#include "sim.h"

#pragma GCC visibility push(hidden)

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

#pragma GCC visibility pop

#endif
