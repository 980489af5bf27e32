/* vmem.c: hsa_amd_vmem_*. */
#ifndef SIM_HSA_VMEM_H
#define SIM_HSA_VMEM_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Live reservations, handles or mappings (`what`). */
long sim_vmem_count(const char *what);

#pragma GCC visibility pop

#endif
