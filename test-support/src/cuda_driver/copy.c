/* Copies: asynchronous ones queued on a stream, synchronous ones on the
 * default stream, waited for. */
#include "capture.h"
#include "core.h"
#include "errors.h"
#include "host_memory.h"
#include "memory.h"
#include "ranges.h"
#include "stream.h"

static CUresult copy_async(enum op_kind kind, uintptr_t dst, uintptr_t src,
                           size_t len, CUstream s, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if ((kind != OP_HTOD && !accessible(src, len)) ||
      (kind != OP_DTOH && !accessible(dst, len)))
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(kind);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.copy.dst = dst;
  op->u.copy.src = src;
  op->u.copy.len = len;
  op->u.copy.pinned = kind == OP_HTOD && host_pinned(src, len);
  return enqueue(s, op, per_thread);
}

/* A synchronous copy: on the default stream (the legacy one unless
 * `per_thread`), done before it returns. */
static CUresult copy_sync(enum op_kind kind, uintptr_t dst, uintptr_t src,
                          size_t len, int per_thread) {
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (!r)
    r = sync_gate(NULL, per_thread);
  if (!r)
    r = copy_async(kind, dst, src, len, NULL, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(NULL, per_thread, NULL);
  wait_idle(s);
  return sticky();
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src,
                                     size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 0);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t len,
                                     CUstream s) {
  INJECT();
  return copy_async(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, s, 0);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
                                     size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 0);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src,
                                          size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 1);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src,
                                          size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, s, 1);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src,
                                          size_t len, CUstream s) {
  INJECT();
  return copy_async(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, s, 1);
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src,
                                size_t len) {
  INJECT();
  return copy_sync(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, 0);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t len) {
  INJECT();
  return copy_sync(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, 0);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src,
                                size_t len) {
  INJECT();
  return copy_sync(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, 0);
}

EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src,
                                     size_t len) {
  INJECT();
  return copy_sync(OP_HTOD, (uintptr_t)dst, (uintptr_t)src, len, 1);
}

EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src,
                                     size_t len) {
  INJECT();
  return copy_sync(OP_DTOH, (uintptr_t)dst, (uintptr_t)src, len, 1);
}

EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src,
                                     size_t len) {
  INJECT();
  return copy_sync(OP_DTOD, (uintptr_t)dst, (uintptr_t)src, len, 1);
}

/* cuMemsetD32_v2: `n` 32-bit words of `value` from `dst` (4-byte aligned),
 * on the default stream. Simulated as a copy of the pattern from host
 * memory, done before the call returns (the driver may return earlier;
 * nothing can tell but the time). */
static CUresult memset_d32(CUdeviceptr dst, unsigned value, size_t n,
                           int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (dst % 4 || n > SIZE_MAX / 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (n == 0)
    return CUDA_SUCCESS;
  unsigned *pattern = malloc(n * 4);
  if (!pattern)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < n; i++)
    pattern[i] = value;
  r = copy_sync(OP_HTOD, (uintptr_t)dst, (uintptr_t)pattern, n * 4,
                per_thread);
  free(pattern);
  return r;
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t n) {
  INJECT();
  return memset_d32(dst, value, n, 0);
}

EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr dst, unsigned value,
                                    size_t n) {
  INJECT();
  return memset_d32(dst, value, n, 1);
}
