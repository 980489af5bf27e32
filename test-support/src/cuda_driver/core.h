/* core.c: the knobs (described there), the device's limits and the
 * context. */
#ifndef SIM_CUDA_CORE_H
#define SIM_CUDA_CORE_H

#include "sim.h"

#pragma GCC visibility push(hidden)

extern unsigned g_shared_optin;
/* The opt-in limit (g_shared_optin), read atomically. */
#define SHARED_OPTIN __atomic_load_n(&g_shared_optin, __ATOMIC_RELAXED)
extern const unsigned MAX_BLOCK[3];
extern const unsigned MAX_GRID[3];
extern int g_initialized;
extern int g_devices;
extern int g_ignore_hints;
extern int g_pool;
extern int g_vmm;
extern int g_param_info;
extern int g_cc;
extern unsigned g_copy_delay_us;
/* Bytes the copies that ran moved: host to device, device to host, device
 * to device (reprise_sim_copied_bytes). */
extern unsigned long long g_copied_bytes[3];
extern unsigned g_upload_delay_us;
extern unsigned g_kernel_delay_us;
extern unsigned g_launch_return_delay_us;
extern unsigned g_static_shared;

struct sim_ctx {
  pthread_mutex_t lock;
  pthread_cond_t idle;
  int retains;
  CUresult sticky; /* a fault spoils the context, as on a device */
  int busy;        /* operations queued on any stream, not yet finished */
  CUdevice device; /* the device it belongs to (cuCtxGetDevice) */
};

/* The most devices REPRISE_SIM_CUDA_DEVICES may ask for. */
#define MAX_DEVICES 8

/* Device 0's primary context; g_ctx.lock guards every context's retain
 * count, and its sticky error and busy count are the whole simulator's
 * (the devices share one memory and one set of streams). */
extern struct sim_ctx g_ctx;
/* Device `dev`'s primary context (a valid ordinal). */
CUcontext primary_ctx(CUdevice dev);
/* Whether `ctx` is a context calls may use: the primary one, or one
 * cuCtxCreate made and cuCtxDestroy has not destroyed. */
int ctx_live(CUcontext ctx);
extern __thread CUcontext t_current;
/* The calling thread's stack of current contexts, t_current its top:
 * pushes `ctx` (0 when the stack is full), or pops the top (the one below
 * it, or none, is current again). */
int ctx_push(CUcontext ctx);
void ctx_pop(void);
CUresult sticky(void);
/* Checks a call may use the context: initialised, current, not faulted. */
CUresult usable(void);
/* Spoils the context with CUDA_ERROR_ILLEGAL_ADDRESS (a kernel's or a
 * copy's bad access), unless it is spoilt already. */
void fault(void);

#pragma GCC visibility pop

#endif
