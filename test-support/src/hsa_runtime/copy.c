/*
 * Asynchronous copies (hsa_amd_memory_async_copy): both ranges must lie in
 * memory the GPU may reach (device memory, host memory allowed for the
 * GPU, vmem mappings with access), checked when the copy is submitted
 * (HSA_STATUS_ERROR_INVALID_ARGUMENT) and again when it runs (abort: the
 * memory went while a copy was queued). One copy thread runs them in
 * submission order, each once its dependencies reached 0 (a copy whose
 * dependencies never do lets later ready ones pass), after a random
 * delay of up to REPRISE_SIM_HSA_COPY_DELAY_US microseconds; then it
 * decrements the completion signal.
 */
#include "copy.h"
#include "core.h"
#include "memory.h"
#include "signal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct job {
  uint64_t dst, src, size;
  int direction; /* 0: host to device, 1: device to host, 2: on the device */
  uint32_t ndeps;
  hsa_signal_t *deps;
  hsa_signal_t done;
  struct job *next;
};

/* The list of queued copies is guarded by sim_sig_mu, so the copy thread
 * waits for new copies and for signal changes on one condition. */
static struct job *head, **tail = &head;
static long queued;
static bool started;
static pthread_t thread;
/* Bytes the copies that ran moved, by direction (sim_hsa_copied). */
static long long copied[3];

/* The bytes the copies that ran so far moved: direction 0 from the CPU
 * agent to the GPU, 1 from the GPU to the CPU, 2 within the GPU (a
 * recorder's traffic, for tests); -1 for another direction. */
EXPORT long long sim_hsa_copied(int direction) {
  if (direction < 0 || direction > 2) return -1;
  return __atomic_load_n(&copied[direction], __ATOMIC_RELAXED);
}

long sim_copy_count(void) {
  pthread_mutex_lock(&sim_sig_mu);
  long n = queued;
  pthread_mutex_unlock(&sim_sig_mu);
  return n;
}

/* The first queued job whose dependencies are all 0, unlinked (sim_sig_mu
 * held): a copy behind a faulted kernel waits forever without holding up
 * the others. */
static struct job *take_ready(void) {
  for (struct job **at = &head; *at; at = &(*at)->next) {
    struct job *j = *at;
    bool ready = true;
    for (uint32_t i = 0; i < j->ndeps && ready; i++)
      ready = sim_signal_value_locked(j->deps[i]) == 0;
    if (!ready) continue;
    *at = j->next;
    if (tail == &j->next) tail = at;
    return j;
  }
  return NULL;
}

static void *copier(void *unused) {
  (void)unused;
  unsigned seed = 12345;
  pthread_mutex_lock(&sim_sig_mu);
  for (;;) {
    struct job *j = take_ready();
    if (!j) {
      pthread_cond_wait(&sim_sig_cond, &sim_sig_mu);
      continue;
    }
    pthread_mutex_unlock(&sim_sig_mu);
    if (sim_copy_delay_us) usleep((unsigned)rand_r(&seed) % (sim_copy_delay_us + 1));
    if (j->size) {
      if (!sim_gpu_can(j->dst, j->size, true) || !sim_gpu_can(j->src, j->size, false))
        sim_abort("an asynchronous copy of %llu bytes from 0x%llx to 0x%llx: "
                  "the memory went while the copy was queued",
                  (unsigned long long)j->size, (unsigned long long)j->src,
                  (unsigned long long)j->dst);
      memmove((void *)(uintptr_t)j->dst, (const void *)(uintptr_t)j->src, j->size);
      if (j->direction >= 0)
        __atomic_fetch_add(&copied[j->direction], (long long)j->size, __ATOMIC_RELAXED);
    }
    sim_signal_add(j->done, -1);
    free(j->deps);
    free(j);
    pthread_mutex_lock(&sim_sig_mu);
    queued--;
  }
  return NULL;
}

EXPORT hsa_status_t hsa_amd_memory_async_copy(
    void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
    size_t size, uint32_t num_dep_signals, const hsa_signal_t *dep_signals,
    hsa_signal_t completion_signal) {
  SIM_ENTER("hsa_amd_memory_async_copy");
  if (!sim_agent_valid(dst_agent) || !sim_agent_valid(src_agent))
    return HSA_STATUS_ERROR_INVALID_AGENT;
  /* ROCr: a count of 0 with a non-null list is INVALID_ARGUMENT too. */
  if (!dst || !src || (num_dep_signals && !dep_signals) || (!num_dep_signals && dep_signals) ||
      !completion_signal.handle)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (size && (!sim_gpu_can((uint64_t)dst, size, true) ||
               !sim_gpu_can((uint64_t)src, size, false)))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  /* Unknown signals abort here, at the call. */
  pthread_mutex_lock(&sim_sig_mu);
  sim_signal_value_locked(completion_signal);
  for (uint32_t i = 0; i < num_dep_signals; i++)
    sim_signal_value_locked(dep_signals[i]);
  pthread_mutex_unlock(&sim_sig_mu);
  struct job *j = calloc(1, sizeof *j);
  if (!j) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  bool to_gpu = dst_agent.handle == SIM_GPU_AGENT, from_gpu = src_agent.handle == SIM_GPU_AGENT;
  int direction = to_gpu && from_gpu ? 2 : to_gpu ? 0 : from_gpu ? 1 : -1;
  *j = (struct job){(uint64_t)dst, (uint64_t)src, size, direction, num_dep_signals,
                    NULL, completion_signal, NULL};
  if (num_dep_signals) {
    j->deps = malloc(num_dep_signals * sizeof *j->deps);
    if (!j->deps) sim_abort("out of memory");
    memcpy(j->deps, dep_signals, num_dep_signals * sizeof *j->deps);
  }
  pthread_mutex_lock(&sim_sig_mu);
  if (!started) {
    if (pthread_create(&thread, NULL, copier, NULL) != 0)
      sim_abort("cannot start the copy thread");
    pthread_detach(thread);
    started = true;
  }
  *tail = j;
  tail = &j->next;
  queued++;
  pthread_cond_broadcast(&sim_sig_cond);
  pthread_mutex_unlock(&sim_sig_mu);
  return HSA_STATUS_SUCCESS;
}
