/*
 * The table of executables: filled and emptied by the loader (loader.c),
 * read by the packet processor (queue.c), which finds the kernel a
 * dispatch names and keeps its executable busy while it runs, and by the
 * kernels (kernels.c), which find their executable's variables.
 */
#include "exe.h"

#include <string.h>

pthread_mutex_t sim_exe_mu = PTHREAD_MUTEX_INITIALIZER;
struct sim_exe **sim_exes;
size_t sim_nexes;

bool sim_kernel_begin(uint64_t object, struct sim_dispatch_kernel *out) {
  pthread_mutex_lock(&sim_exe_mu);
  for (size_t i = 0; i < sim_nexes; i++) {
    struct sim_exe *x = sim_exes[i];
    if (!x->live) continue;
    for (size_t k = 0; k < x->nsyms; k++)
      if (x->syms[k].kind == HSA_SYMBOL_KIND_KERNEL && x->syms[k].addr == object) {
        x->running++;
        *out = (struct sim_dispatch_kernel){x, x->syms[k].name, x->syms[k].fn,
                                            x->syms[k].kernarg_size};
        pthread_mutex_unlock(&sim_exe_mu);
        return true;
      }
  }
  pthread_mutex_unlock(&sim_exe_mu);
  return false;
}

void sim_kernel_end(struct sim_exe *x) {
  pthread_mutex_lock(&sim_exe_mu);
  x->running--;
  pthread_mutex_unlock(&sim_exe_mu);
}

/* Only called while the executable runs a kernel (so it stays). */
uint64_t sim_exe_var(struct sim_exe *x, const char *name, uint64_t *size) {
  pthread_mutex_lock(&sim_exe_mu);
  uint64_t addr = 0;
  for (size_t k = 0; k < x->nsyms; k++)
    if (x->syms[k].kind == HSA_SYMBOL_KIND_VARIABLE &&
        strcmp(x->syms[k].name, name) == 0) {
      addr = x->syms[k].addr;
      if (size) *size = x->syms[k].size;
    }
  pthread_mutex_unlock(&sim_exe_mu);
  return addr;
}
