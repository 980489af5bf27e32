/*
 * The calling thread's stack of current contexts (cuCtxPushCurrent,
 * cuCtxPopCurrent) and the device of the current context
 * (cuCtxGetDevice). The top of the stack is core.c's t_current, which
 * cuCtxSetCurrent replaces.
 */
#include "core.h"
#include "errors.h"

/* The contexts below the top, oldest first. */
#define CTX_STACK 64
static __thread CUcontext t_below[CTX_STACK];
static __thread int t_depth;

/* CUDA Driver API, Context Management, cuCtxPushCurrent: `ctx` becomes
 * current, the context current before it waits below it. */
EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (!ctx_live(ctx))
    return CUDA_ERROR_INVALID_CONTEXT;
  if (t_depth == CTX_STACK)
    return CUDA_ERROR_OUT_OF_MEMORY;
  t_below[t_depth++] = t_current;
  t_current = ctx;
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Context Management, cuCtxPopCurrent: the current
 * context comes off the stack (passed back in *pctx unless pctx is NULL)
 * and the one below it is current again; CUDA_ERROR_INVALID_CONTEXT when
 * none is current. */
EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!t_current)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx)
    *pctx = t_current;
  t_current = t_depth ? t_below[--t_depth] : NULL;
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Context Management, cuCtxGetDevice: the device of the
 * current context (a primary one's device, or the one cuCtxCreate was
 * given). */
EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!device)
    return CUDA_ERROR_INVALID_VALUE;
  if (!t_current || !ctx_live(t_current))
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = t_current->device;
  return CUDA_SUCCESS;
}
