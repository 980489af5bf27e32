/* core.c: init, fault injection, failing loudly, the agents and the knobs
 * the other files read. */
#ifndef SIM_HSA_CORE_H
#define SIM_HSA_CORE_H

#include "sim.h"

#pragma GCC visibility push(hidden)

bool sim_initialised(void);
/* Whether the current call of `fn` is the one REPRISE_SIM_HSA_FAIL names. */
bool sim_should_fail(const char *fn);
__attribute__((noreturn, format(printf, 1, 2))) void sim_abort(const char *fmt, ...);
bool sim_agent_valid(hsa_agent_t a);
bool sim_gpu_present(void);
const char *sim_gpu_name(void);
unsigned sim_gpu_mach(void);
extern bool sim_vmem_ignore_hints;
extern unsigned sim_copy_delay_us;

/* Every entry point returning a status starts with this. */
#define SIM_ENTER(name)                                                        \
  do {                                                                         \
    if (!sim_initialised()) return HSA_STATUS_ERROR_NOT_INITIALIZED;           \
    if (sim_should_fail(name)) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;       \
  } while (0)

#pragma GCC visibility pop

#endif
