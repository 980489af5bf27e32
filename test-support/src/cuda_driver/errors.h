/* errors.c: fault injection. */
#ifndef SIM_CUDA_ERRORS_H
#define SIM_CUDA_ERRORS_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* The status this call of the driver function named `call` fails with as
 * reprise_sim_fail[_times] injected it (0: none; the call counts against
 * the injection's skips and times); INJECT() returns it from the driver
 * function it begins. */
CUresult injected(const char *call);
EXPORT void reprise_sim_fail(const char *call, int code, int skip);

#define INJECT()                                                               \
  do {                                                                         \
    CUresult injected_ = injected(__func__);                                   \
    if (injected_)                                                             \
      return injected_;                                                        \
  } while (0)

#pragma GCC visibility pop

#endif
