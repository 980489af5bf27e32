/* What is live, for tests: reprise_sim_counts asks each file that keeps
 * a kind of object how many it holds. */
#include "event.h"
#include "host_memory.h"
#include "memory.h"
#include "module.h"
#include "ranges.h"
#include "stream.h"

/* Simulator only: what is live, for tests that check every step of a
 * failed operation was undone: address reservations, cuMemMap mappings,
 * physical allocations, cuMemAlloc allocations, page-locked host ranges
 * (allocated or registered), streams (not the default ones), events,
 * modules, and the MiB of physical allocations. */
EXPORT void reprise_sim_counts(int out[9]) {
  pthread_mutex_lock(&g_mem);
  out[0] = g_nreserved;
  out[1] = g_nmapped;
  out[2] = __atomic_load_n(&g_nphysical, __ATOMIC_RELAXED);
  out[3] = g_nallocs;
  out[4] = g_nhost;
  pthread_mutex_unlock(&g_mem);
  int streams = 0;
  pthread_mutex_lock(&g_streams_lock);
  for (struct sim_stream *st = g_streams; st; st = st->next)
    streams += !st->implicit; /* the default streams are the driver's */
  pthread_mutex_unlock(&g_streams_lock);
  out[5] = streams;
  out[6] = __atomic_load_n(&g_nevents, __ATOMIC_RELAXED);
  out[7] = __atomic_load_n(&g_nmodules, __ATOMIC_RELAXED);
  out[8] = (int)(__atomic_load_n(&g_physical_bytes, __ATOMIC_RELAXED) >> 20);
}
