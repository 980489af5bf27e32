/* library.c: CUDA 12's libraries and their kernels. */
#ifndef SIM_CUDA_LIBRARY_H
#define SIM_CUDA_LIBRARY_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* The function a handle names: a CUfunction, or a CUkernel passed as
 * one. */
CUfunction fn_of(CUfunction f);

#pragma GCC visibility pop

#endif
