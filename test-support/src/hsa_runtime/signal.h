/* signal.c: signals, waits, asynchronous handlers. */
#ifndef SIM_HSA_SIGNAL_H
#define SIM_HSA_SIGNAL_H

#include "sim.h"

/* Entry points the simulator calls itself. */
EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial,
                                      uint32_t num_consumers,
                                      const hsa_agent_t *consumers,
                                      hsa_signal_t *signal);
EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal);

#pragma GCC visibility push(hidden)

/* The lock and condition every wait on a signal (or a queue's doorbell)
 * uses: broadcast on every signal change. */
extern pthread_mutex_t sim_sig_mu;
extern pthread_cond_t sim_sig_cond;
/* The signal's value (aborts on an unknown handle); with sim_sig_mu held. */
int64_t sim_signal_value_locked(hsa_signal_t s);
/* Adds `delta` to the signal and wakes waiters (aborts when unknown). */
void sim_signal_add(hsa_signal_t s, int64_t delta);
/* Waits (sim_sig_mu held) until `*stop` or 1 ms passed. */
void sim_sig_wait_a_little(void);
long sim_signal_count(void);

long sim_handler_count(void);

#pragma GCC visibility pop

#endif
