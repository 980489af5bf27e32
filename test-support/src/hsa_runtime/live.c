/*
 * What is live, for tests: sim_hsa_live asks each file that keeps a kind
 * of object how many it holds.
 */
#include "copy.h"
#include "loader.h"
#include "memory.h"
#include "queue.h"
#include "signal.h"
#include "vmem.h"

#include <string.h>

EXPORT long sim_hsa_live(const char *what) {
  if (!what) return -1;
  if (strcmp(what, "allocations") == 0)
    return sim_mem_count(SIM_MEM_DEVICE) + sim_mem_count(SIM_MEM_HOST);
  if (strcmp(what, "signals") == 0) return sim_signal_count();
  if (strcmp(what, "handlers") == 0) return sim_handler_count();
  if (strcmp(what, "queues") == 0) return sim_queue_count();
  if (strcmp(what, "copies") == 0) return sim_copy_count();
  if (strcmp(what, "executables") == 0 || strcmp(what, "readers") == 0)
    return sim_loader_count(what);
  if (strcmp(what, "reservations") == 0 || strcmp(what, "handles") == 0 ||
      strcmp(what, "mappings") == 0)
    return sim_vmem_count(what);
  return -1;
}
