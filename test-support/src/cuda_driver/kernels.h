/* kernels.c: the fixture kernels and the interpreter that runs them. */
#ifndef SIM_CUDA_KERNELS_H
#define SIM_CUDA_KERNELS_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* The fixture kernels, NKERNELS of them. */
extern const struct kernel_def KERNELS[];
extern const size_t NKERNELS;
/* Runs a launch, block by block; a bad access faults the context. */
void run_kernel(struct launch *l);

#pragma GCC visibility pop

#endif
