/*
 * Signals: 64-bit values behind handles that are never reused (so a
 * destroyed one is recognised and aborts), one lock and one condition
 * variable for every wait (broadcast on every change), and asynchronous
 * handlers run by one handler thread.
 */
#include "core.h"
#include "signal.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#define SIG_BASE 0x5160000000ull

pthread_mutex_t sim_sig_mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_sig_cond = PTHREAD_COND_INITIALIZER;

struct sig {
  bool live;
  int64_t value;
};
static struct sig *sigs;
static size_t nsigs, capsigs;
static long live_sigs;

struct handler {
  hsa_signal_t sig;
  uint32_t cond;
  int64_t value;
  hsa_amd_signal_handler fn;
  void *arg;
  struct handler *next;
};
static struct handler *handlers;
static long live_handlers;
static long registrations;
static long waits;
static bool handler_thread_started;
static pthread_t handler_thread;

/* The signal behind `s` (sim_sig_mu held); aborts when unknown. */
static struct sig *lookup(hsa_signal_t s, const char *what) {
  uint64_t i = s.handle - SIG_BASE;
  if (s.handle < SIG_BASE || i >= nsigs)
    sim_abort("%s: 0x%llx is not a signal", what, (unsigned long long)s.handle);
  if (!sigs[i].live)
    sim_abort("%s: signal 0x%llx was destroyed", what,
              (unsigned long long)s.handle);
  return &sigs[i];
}

static bool holds(int64_t v, uint32_t cond, int64_t cmp) {
  switch (cond) {
    case HSA_SIGNAL_CONDITION_EQ: return v == cmp;
    case HSA_SIGNAL_CONDITION_NE: return v != cmp;
    case HSA_SIGNAL_CONDITION_LT: return v < cmp;
    case HSA_SIGNAL_CONDITION_GTE: return v >= cmp;
  }
  sim_abort("an unknown signal condition %u", cond);
}

int64_t sim_signal_value_locked(hsa_signal_t s) {
  return __atomic_load_n(&lookup(s, "a wait")->value, __ATOMIC_ACQUIRE);
}

void sim_signal_add(hsa_signal_t s, int64_t delta) {
  pthread_mutex_lock(&sim_sig_mu);
  struct sig *g = lookup(s, "completing an operation");
  __atomic_add_fetch(&g->value, delta, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&sim_sig_cond);
  pthread_mutex_unlock(&sim_sig_mu);
}

static void deadline_in(struct timespec *t, uint64_t ns) {
  clock_gettime(CLOCK_REALTIME, t);
  t->tv_sec += (time_t)(ns / 1000000000u);
  t->tv_nsec += (long)(ns % 1000000000u);
  if (t->tv_nsec >= 1000000000) {
    t->tv_sec++;
    t->tv_nsec -= 1000000000;
  }
}

void sim_sig_wait_a_little(void) {
  struct timespec t;
  deadline_in(&t, 1000000);
  pthread_cond_timedwait(&sim_sig_cond, &sim_sig_mu, &t);
}

long sim_signal_count(void) {
  pthread_mutex_lock(&sim_sig_mu);
  long n = live_sigs;
  pthread_mutex_unlock(&sim_sig_mu);
  return n;
}

long sim_handler_count(void) {
  pthread_mutex_lock(&sim_sig_mu);
  long n = live_handlers;
  pthread_mutex_unlock(&sim_sig_mu);
  return n;
}

EXPORT long sim_hsa_waits(void) { return __atomic_load_n(&waits, __ATOMIC_RELAXED); }

EXPORT long sim_hsa_handlers(void) {
  return __atomic_load_n(&registrations, __ATOMIC_RELAXED);
}

EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial,
                                      uint32_t num_consumers,
                                      const hsa_agent_t *consumers,
                                      hsa_signal_t *signal) {
  SIM_ENTER("hsa_signal_create");
  if (!signal || (num_consumers > 0 && !consumers))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < num_consumers; i++)
    if (!sim_agent_valid(consumers[i])) return HSA_STATUS_ERROR_INVALID_AGENT;
  pthread_mutex_lock(&sim_sig_mu);
  if (nsigs == capsigs) {
    capsigs = capsigs ? capsigs * 2 : 256;
    sigs = realloc(sigs, capsigs * sizeof *sigs);
    if (!sigs) sim_abort("out of memory");
  }
  sigs[nsigs] = (struct sig){true, initial};
  signal->handle = SIG_BASE + nsigs++;
  live_sigs++;
  pthread_mutex_unlock(&sim_sig_mu);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t signal) {
  SIM_ENTER("hsa_signal_destroy");
  pthread_mutex_lock(&sim_sig_mu);
  struct sig *g = lookup(signal, "hsa_signal_destroy");
  for (struct handler *h = handlers; h; h = h->next)
    if (h->sig.handle == signal.handle)
      sim_abort("hsa_signal_destroy: signal 0x%llx still has an asynchronous "
                "handler registered",
                (unsigned long long)signal.handle);
  g->live = false;
  live_sigs--;
  pthread_mutex_unlock(&sim_sig_mu);
  return HSA_STATUS_SUCCESS;
}

static int64_t load(hsa_signal_t s, const char *what) {
  pthread_mutex_lock(&sim_sig_mu);
  int64_t v = __atomic_load_n(&lookup(s, what)->value, __ATOMIC_ACQUIRE);
  pthread_mutex_unlock(&sim_sig_mu);
  return v;
}

static void store(hsa_signal_t s, int64_t v, const char *what) {
  pthread_mutex_lock(&sim_sig_mu);
  __atomic_store_n(&lookup(s, what)->value, v, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&sim_sig_cond);
  pthread_mutex_unlock(&sim_sig_mu);
}

EXPORT hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t s) {
  return load(s, "hsa_signal_load_scacquire");
}

EXPORT hsa_signal_value_t hsa_signal_load_relaxed(hsa_signal_t s) {
  return load(s, "hsa_signal_load_relaxed");
}

EXPORT void hsa_signal_store_relaxed(hsa_signal_t s, hsa_signal_value_t v) {
  store(s, v, "hsa_signal_store_relaxed");
}

EXPORT void hsa_signal_store_screlease(hsa_signal_t s, hsa_signal_value_t v) {
  store(s, v, "hsa_signal_store_screlease");
}

EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(
    hsa_signal_t s, uint32_t cond, hsa_signal_value_t compare,
    uint64_t timeout_hint, uint32_t wait_state) {
  (void)wait_state;
  if (!sim_initialised())
    sim_abort("hsa_signal_wait_scacquire before hsa_init");
  __atomic_add_fetch(&waits, 1, __ATOMIC_RELAXED);
  /* The hint counts nanoseconds here; a huge one is forever. */
  bool forever = timeout_hint >= (1ull << 62);
  struct timespec deadline;
  if (!forever) deadline_in(&deadline, timeout_hint);
  pthread_mutex_lock(&sim_sig_mu);
  int64_t v;
  for (;;) {
    v = __atomic_load_n(&lookup(s, "hsa_signal_wait_scacquire")->value,
                        __ATOMIC_ACQUIRE);
    if (holds(v, cond, compare)) break;
    if (forever) {
      pthread_cond_wait(&sim_sig_cond, &sim_sig_mu);
    } else if (pthread_cond_timedwait(&sim_sig_cond, &sim_sig_mu, &deadline) ==
               ETIMEDOUT) {
      v = __atomic_load_n(&lookup(s, "hsa_signal_wait_scacquire")->value,
                          __ATOMIC_ACQUIRE);
      break;
    }
  }
  pthread_mutex_unlock(&sim_sig_mu);
  return v;
}

/* The handler thread: calls each handler whose condition holds, outside
 * the lock and unregistered meanwhile (so the handler may let its owner
 * destroy the signal), and re-registers it if it returns true. */
static void *handler_main(void *unused) {
  (void)unused;
  pthread_mutex_lock(&sim_sig_mu);
  for (;;) {
    struct handler **at = &handlers, *h = NULL;
    for (; *at; at = &(*at)->next) {
      int64_t v = __atomic_load_n(&lookup((*at)->sig, "a signal handler")->value,
                                  __ATOMIC_ACQUIRE);
      if (holds(v, (*at)->cond, (*at)->value)) {
        h = *at;
        *at = h->next;
        break;
      }
    }
    if (!h) {
      pthread_cond_wait(&sim_sig_cond, &sim_sig_mu);
      continue;
    }
    int64_t v = __atomic_load_n(&lookup(h->sig, "a signal handler")->value,
                                __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&sim_sig_mu);
    bool again = h->fn(v, h->arg);
    pthread_mutex_lock(&sim_sig_mu);
    if (again) {
      lookup(h->sig, "a re-armed signal handler");
      h->next = handlers;
      handlers = h;
    } else {
      live_handlers--;
      free(h);
    }
  }
  return NULL;
}

EXPORT hsa_status_t hsa_amd_signal_async_handler(hsa_signal_t signal,
                                                 uint32_t cond,
                                                 hsa_signal_value_t value,
                                                 hsa_amd_signal_handler handler,
                                                 void *arg) {
  SIM_ENTER("hsa_amd_signal_async_handler");
  if (!handler || cond > HSA_SIGNAL_CONDITION_GTE)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  struct handler *h = malloc(sizeof *h);
  if (!h) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  *h = (struct handler){signal, cond, value, handler, arg, NULL};
  pthread_mutex_lock(&sim_sig_mu);
  lookup(signal, "hsa_amd_signal_async_handler");
  if (!handler_thread_started) {
    if (pthread_create(&handler_thread, NULL, handler_main, NULL) != 0)
      sim_abort("cannot start the signal handler thread");
    pthread_detach(handler_thread);
    handler_thread_started = true;
  }
  h->next = handlers;
  handlers = h;
  live_handlers++;
  __atomic_add_fetch(&registrations, 1, __ATOMIC_RELAXED);
  pthread_cond_broadcast(&sim_sig_cond);
  pthread_mutex_unlock(&sim_sig_mu);
  return HSA_STATUS_SUCCESS;
}
