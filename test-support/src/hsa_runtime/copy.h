/* copy.c: hsa_amd_memory_async_copy. */
#ifndef SIM_HSA_COPY_H
#define SIM_HSA_COPY_H

#include "sim.h"

#pragma GCC visibility push(hidden)

long sim_copy_count(void);

#pragma GCC visibility pop

#endif
