/* kernels.c: the fixtures' kernels as C. */
#ifndef SIM_HSA_KERNELS_H
#define SIM_HSA_KERNELS_H

#include "exe.h"

/* The address of the last GPU memory fault. */
extern uint64_t sim_fault_address;

#pragma GCC visibility push(hidden)

/* The C body of the kernel whose descriptor symbol is `symbol` (NULL:
 * none). */
sim_kernel_fn sim_kernel_lookup(const char *symbol);

#pragma GCC visibility pop

#endif
