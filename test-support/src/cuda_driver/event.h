/* event.c: events. */
#ifndef SIM_CUDA_EVENT_H
#define SIM_CUDA_EVENT_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* Live events (atomic). */
extern int g_nevents;

#pragma GCC visibility pop

#endif
