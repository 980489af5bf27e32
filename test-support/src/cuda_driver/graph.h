/* graph.c: graphs and graph executables. */
#ifndef SIM_CUDA_GRAPH_H
#define SIM_CUDA_GRAPH_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Makes the kernels of `m` in graphs, graph executables and captures
 * dead, as the module goes (see cuGraphLaunch). */
void forget_module(CUmodule m);

#pragma GCC visibility pop

#endif
