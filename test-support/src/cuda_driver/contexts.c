/*
 * The calling thread's stack of current contexts (cuCtxPushCurrent,
 * cuCtxPopCurrent) and the device of the current context
 * (cuCtxGetDevice). The stack is core.c's; its top, t_current,
 * cuCtxSetCurrent replaces (CUDA Driver API, Context Management,
 * cuCtxSetCurrent: with NULL, "equivalent to popping the top of the
 * calling CPU thread's CUDA context stack"); cuCtxDestroy of the current
 * context pops it too.
 */
#include "core.h"
#include "errors.h"

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
  return ctx_push(ctx) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
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
  ctx_pop();
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
