/* exe.c: the table of executables, which the loader (loader.c) fills and
 * empties, and the packet processor (queue.c) and the kernels (kernels.c)
 * read: the kernel a dispatch names, the variables a kernel uses. */
#ifndef SIM_HSA_EXE_H
#define SIM_HSA_EXE_H

#include "sim.h"

#pragma GCC visibility push(hidden)

struct sim_exe;
typedef struct sim_item {
  uint64_t gid[3];       /* global work-item id */
  uint32_t grid[3];      /* grid size in work-items */
  const uint8_t *kernarg;
  struct sim_exe *exe;
  uint32_t wg[3];        /* work-group size in work-items */
} sim_item;
/* A kernel's C body: 0, or the status of its fault. */
typedef hsa_status_t (*sim_kernel_fn)(const sim_item *);
struct sim_dispatch_kernel {
  struct sim_exe *exe;
  const char *name;
  sim_kernel_fn fn;  /* NULL: no C implementation */
  uint32_t kernarg_size;
};

struct sym {
  char name[128];
  uint32_t kind;
  uint64_t addr;
  uint64_t size;
  uint32_t kernarg_size, group_size, private_size;
  sim_kernel_fn fn;
};
struct sim_exe {
  bool live, loaded, frozen;
  uint8_t *seg;
  uint64_t seg_size;
  struct sym *syms;
  size_t nsyms;
  long running;
};

/* Guards the table (and the loader's readers). */
extern pthread_mutex_t sim_exe_mu;
/* Every executable made, live or destroyed, by handle order. */
extern struct sim_exe **sim_exes;
extern size_t sim_nexes;

/* Finds the kernel whose descriptor is at `object` and marks its
 * executable busy; false if none. */
bool sim_kernel_begin(uint64_t object, struct sim_dispatch_kernel *out);
void sim_kernel_end(struct sim_exe *exe);
/* The address of a variable of the executable (0 if it has none). */
uint64_t sim_exe_var(struct sim_exe *exe, const char *name, uint64_t *size);

#pragma GCC visibility pop

#endif
