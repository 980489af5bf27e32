/*
 * Kernel launches: cuLaunchKernel, cooperative launches and
 * cuLaunchKernelEx with its attributes, checked against the device's
 * and the function's limits.
 */
#include "core.h"
#include "errors.h"
#include "library.h"
#include "stream.h"

/* Whether a cooperative launch's blocks can all be resident at once, as
 * they must: at most MULTIPROCESSORS times the blocks one multiprocessor
 * holds, which its warps (rounded up per block), its block slots and its
 * shared memory (each block's static and dynamic shared memory and the
 * driver's reserve) limit. Registers are not simulated. */
static int cooperative_fits(CUfunction f, const unsigned grid[3],
                            const unsigned block[3], unsigned shared) {
  unsigned long long threads =
      (unsigned long long)block[0] * block[1] * block[2];
  unsigned long long warps = (threads + 31) / 32;
  unsigned long long per_sm = MAX_WARPS_PER_SM / warps;
  if (per_sm > MAX_BLOCKS_PER_SM)
    per_sm = MAX_BLOCKS_PER_SM;
  unsigned long long smem =
      (unsigned long long)f->static_shared + shared + RESERVED_SHARED;
  unsigned long long by_smem = (SHARED_OPTIN + RESERVED_SHARED) / smem;
  if (per_sm > by_smem)
    per_sm = by_smem;
  unsigned long long blocks = (unsigned long long)grid[0] * grid[1] * grid[2];
  return blocks <= per_sm * MULTIPROCESSORS;
}

static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                       unsigned bx, unsigned by, unsigned bz,
                       unsigned shared, CUstream s, void **params,
                       void **extra, int per_thread, int cooperative) {
  CUresult r = usable();
  if (r)
    return r;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  for (int d = 0; d < 3; d++)
    if (!grid[d] || !block[d] || grid[d] > MAX_GRID[d] ||
        block[d] > MAX_BLOCK[d])
      return CUDA_ERROR_INVALID_VALUE;
  /* No more dynamic shared memory than the function is allowed (48 KiB
   * less its static shared memory, unless cuFuncSetAttribute changed it),
   * and static plus dynamic within the opt-in limit. */
  unsigned max_shared =
      __atomic_load_n(&f->max_dynamic_shared, __ATOMIC_RELAXED);
  if ((unsigned long long)bx * by * bz > f->max_threads ||
      shared > max_shared ||
      (unsigned long long)f->static_shared + shared > SHARED_OPTIN || extra ||
      (f->def->nparams && !params))
    return CUDA_ERROR_INVALID_VALUE;
  if (cooperative && !cooperative_fits(f, grid, block, shared))
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  struct op *op = new_op(OP_KERNEL);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  struct launch *l = &op->u.launch;
  l->def = f->def;
  l->module = f->module;
  l->shared = shared;
  l->delay_us = __atomic_load_n(&g_kernel_delay_us, __ATOMIC_RELAXED);
  memcpy(l->grid, grid, sizeof grid);
  memcpy(l->block, block, sizeof block);
  /* The driver copies the arguments at launch. */
  for (int i = 0; i < f->def->nparams; i++)
    memcpy(l->params + f->def->params[i].offset, params[i],
           f->def->params[i].size);
  r = enqueue(s, op, per_thread);
  unsigned delay = __atomic_load_n(&g_launch_return_delay_us, __ATOMIC_RELAXED);
  if (delay)
    usleep(delay);
  return r;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy,
                               unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s,
                               void **params, void **extra) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, 0, 0);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                    unsigned gz, unsigned bx, unsigned by,
                                    unsigned bz, unsigned shared, CUstream s,
                                    void **params, void **extra) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra, 1, 0);
}

/* A cooperative launch runs as any other (blocks never wait for each
 * other here), but only when all its blocks fit on the device at once. */
EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx,
                                          unsigned gy, unsigned gz,
                                          unsigned bx, unsigned by,
                                          unsigned bz, unsigned shared,
                                          CUstream s, void **params) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL, 0, 1);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx,
                                               unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by,
                                               unsigned bz, unsigned shared,
                                               CUstream s, void **params) {
  INJECT();
  return launch(f, gx, gy, gz, bx, by, bz, shared, s, params, NULL, 1, 1);
}

/* cuLaunchKernelEx: the attributes the simulator takes are ignore,
 * cooperative (as cuLaunchCooperativeKernel when nonzero), a cluster shape
 * that divides the grid, and a priority; any other is
 * CUDA_ERROR_NOT_SUPPORTED. */
static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f,
                          void **params, void **extra, int per_thread) {
  if (!c || (c->numAttrs && !c->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  int cooperative = 0;
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const CUlaunchAttribute *a = &c->attrs[i];
    switch (a->id) {
    case LAUNCH_ATTR_COOPERATIVE:
      cooperative = a->value.cooperative != 0;
      break;
    case LAUNCH_ATTR_IGNORE:
    case LAUNCH_ATTR_PRIORITY:
      break;
    case LAUNCH_ATTR_CLUSTER_DIMENSION: {
      unsigned x = a->value.clusterDim.x, y = a->value.clusterDim.y,
               z = a->value.clusterDim.z;
      if (!x || !y || !z || c->gridDimX % x || c->gridDimY % y ||
          c->gridDimZ % z)
        return CUDA_ERROR_INVALID_VALUE;
      break;
    }
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
                params, extra, per_thread, cooperative);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                 void **params, void **extra) {
  INJECT();
  return launch_ex(config, f, params, extra, 0);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config,
                                      CUfunction f, void **params,
                                      void **extra) {
  INJECT();
  return launch_ex(config, f, params, extra, 1);
}
