/*
 * 2D copies (cuMemcpy2D, cuMemcpy2DAsync) and 8-bit memsets (cuMemsetD8,
 * cuMemsetD8Async): row by row, each row a copy queued on the stream as
 * copy.c queues one.
 */
#include "capture.h"
#include "core.h"
#include "errors.h"
#include "host_memory.h"
#include "ranges.h"
#include "stream.h"

/* CUmemorytype (cuda.h). */
#define MEMORYTYPE_HOST 1
#define MEMORYTYPE_DEVICE 2
#define MEMORYTYPE_ARRAY 3
#define MEMORYTYPE_UNIFIED 4

/* CUDA_MEMCPY2D (the _v2 layout, with size_t fields), as cuda.h lays it
 * out. */
typedef struct {
  size_t srcXInBytes, srcY;
  int srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  size_t srcPitch;
  size_t dstXInBytes, dstY;
  int dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  size_t dstPitch;
  size_t WidthInBytes;
  size_t Height;
} CUDA_MEMCPY2D;

/* One side of a 2D copy: its first byte, its pitch, and whether it is
 * device memory; 0 when the descriptor is not one the driver takes (CUDA
 * arrays: the simulator has none, so no handle is valid). */
static int side(int type, const void *host, CUdeviceptr device, size_t x,
                size_t y, size_t pitch, uintptr_t *start, int *on_device) {
  uintptr_t base;
  switch (type) {
  case MEMORYTYPE_HOST:
    base = (uintptr_t)host;
    *on_device = 0;
    break;
  case MEMORYTYPE_DEVICE:
    base = (uintptr_t)device;
    *on_device = 1;
    break;
  case MEMORYTYPE_UNIFIED:
    /* A unified address is device memory where the device has it. */
    base = (uintptr_t)device;
    *on_device = accessible(base, 1);
    break;
  default:
    return 0;
  }
  if (!base || (y && pitch > (SIZE_MAX - x) / y))
    return 0;
  *start = base + y * pitch + x;
  return 1;
}

/* Queues the rows of `c` on the stream handle `h` names; host-to-host rows
 * are copied once the stream has run what was queued before them. */
static CUresult copy_2d(const CUDA_MEMCPY2D *c, CUstream h, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!c)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t src, dst;
  int src_dev, dst_dev;
  size_t w = c->WidthInBytes, rows = c->Height;
  /* "srcPitch must be greater than or equal to WidthInBytes + srcXInBytes,
   * and dstPitch must be greater than or equal to WidthInBytes +
   * dstXInBytes" (one row needs no pitch). */
  if (!side(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes,
            c->srcY, c->srcPitch, &src, &src_dev) ||
      !side(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes,
            c->dstY, c->dstPitch, &dst, &dst_dev) ||
      (rows > 1 && (c->srcPitch < w + c->srcXInBytes ||
                    c->dstPitch < w + c->dstXInBytes)))
    return CUDA_ERROR_INVALID_VALUE;
  if (w == 0 || rows == 0)
    return CUDA_SUCCESS;
  /* Every row of device memory must be there. */
  for (size_t i = 0; i < rows; i++)
    if ((src_dev && !accessible(src + i * c->srcPitch, w)) ||
        (dst_dev && !accessible(dst + i * c->dstPitch, w)))
      return CUDA_ERROR_INVALID_VALUE;
  if (!src_dev && !dst_dev) {
    CUstream s = stream_of(h, per_thread, NULL);
    if (!s)
      return CUDA_ERROR_OUT_OF_MEMORY;
    wait_idle(s);
    for (size_t i = 0; i < rows; i++)
      memmove((void *)(dst + i * c->dstPitch),
              (const void *)(src + i * c->srcPitch), w);
    return sticky();
  }
  enum op_kind kind = !src_dev ? OP_HTOD : !dst_dev ? OP_DTOH : OP_DTOD;
  for (size_t i = 0; i < rows; i++) {
    struct op *op = new_op(kind);
    if (op) {
      op->u.copy.dst = dst + i * c->dstPitch;
      op->u.copy.src = src + i * c->srcPitch;
      op->u.copy.len = w;
      op->u.copy.pinned = kind == OP_HTOD && host_pinned(op->u.copy.src, w);
    }
    r = enqueue(h, op, per_thread);
    if (r)
      return r;
  }
  return CUDA_SUCCESS;
}

/* A synchronous 2D copy: on the default stream, done before it returns. */
static CUresult copy_2d_sync(const CUDA_MEMCPY2D *c, int per_thread) {
  CUresult r = usable();
  if (!r)
    r = unsafe_call();
  if (!r)
    r = sync_gate(NULL, per_thread);
  if (!r)
    r = copy_2d(c, NULL, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(NULL, per_thread, NULL);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  wait_idle(s);
  return sticky();
}

/* CUDA Driver API, Memory Management, cuMemcpy2D. */
EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c) {
  INJECT();
  return copy_2d_sync(c, 0);
}

EXPORT CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *c) {
  INJECT();
  return copy_2d_sync(c, 1);
}

/* CUDA Driver API, Memory Management, cuMemcpy2DAsync. */
EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s) {
  INJECT();
  return copy_2d(c, s, 0);
}

EXPORT CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *c,
                                        CUstream s) {
  INJECT();
  return copy_2d(c, s, 1);
}

/* The bytes a memset copies from: PATTERN bytes of one value, made at the
 * first memset with it and kept for the life of the process (a queued
 * copy may read them any time later). */
#define PATTERN ((size_t)64 << 10)
static pthread_mutex_t g_patterns_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *g_patterns[256];

static const unsigned char *pattern(unsigned char value) {
  pthread_mutex_lock(&g_patterns_lock);
  if (!g_patterns[value]) {
    g_patterns[value] = malloc(PATTERN);
    if (g_patterns[value])
      memset(g_patterns[value], value, PATTERN);
  }
  const unsigned char *p = g_patterns[value];
  pthread_mutex_unlock(&g_patterns_lock);
  return p;
}

/* `n` bytes of `value` from `dst` (device memory), queued on the stream
 * handle `h` names. */
static CUresult memset_d8(CUdeviceptr dst, unsigned char value, size_t n,
                          CUstream h, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (n == 0)
    return CUDA_SUCCESS;
  if (!accessible((uintptr_t)dst, n))
    return CUDA_ERROR_INVALID_VALUE;
  const unsigned char *from = pattern(value);
  if (!from)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t done = 0; done < n; done += PATTERN) {
    struct op *op = new_op(OP_HTOD);
    if (op) {
      op->u.copy.dst = (uintptr_t)dst + done;
      op->u.copy.src = (uintptr_t)from;
      op->u.copy.len = n - done < PATTERN ? n - done : PATTERN;
    }
    r = enqueue(h, op, per_thread);
    if (r)
      return r;
  }
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Memory Management, cuMemsetD8: on the default stream,
 * done before it returns (the driver may return earlier for device
 * memory; nothing can tell but the time). */
static CUresult memset_d8_sync(CUdeviceptr dst, unsigned char value,
                               size_t n, int per_thread) {
  CUresult r = usable();
  if (!r)
    r = sync_gate(NULL, per_thread);
  if (!r)
    r = memset_d8(dst, value, n, NULL, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(NULL, per_thread, NULL);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  wait_idle(s);
  return sticky();
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value,
                              size_t n) {
  INJECT();
  return memset_d8_sync(dst, value, n, 0);
}

EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr dst, unsigned char value,
                                   size_t n) {
  INJECT();
  return memset_d8_sync(dst, value, n, 1);
}

/* CUDA Driver API, Memory Management, cuMemsetD8Async. */
EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value,
                                size_t n, CUstream s) {
  INJECT();
  return memset_d8(dst, value, n, s, 0);
}

EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr dst, unsigned char value,
                                     size_t n, CUstream s) {
  INJECT();
  return memset_d8(dst, value, n, s, 1);
}
