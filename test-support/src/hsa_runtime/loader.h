/* loader.c: code object readers and executables. */
#ifndef SIM_HSA_LOADER_H
#define SIM_HSA_LOADER_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Live executables, or readers (`what`). */
long sim_loader_count(const char *what);

#pragma GCC visibility pop

#endif
