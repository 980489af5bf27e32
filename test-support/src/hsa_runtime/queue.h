/* queue.c: AQL queues and their packet processors. */
#ifndef SIM_HSA_QUEUE_H
#define SIM_HSA_QUEUE_H

#include "sim.h"

#pragma GCC visibility push(hidden)

long sim_queue_count(void);
/* Aborts when a live queue holds a dispatch of a kernel whose descriptor
 * lies in [lo, hi). */
void sim_queue_check_unused(uint64_t lo, uint64_t hi, const char *what);

#pragma GCC visibility pop

#endif
