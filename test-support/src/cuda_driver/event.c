/* Events: recorded on a stream, waited for by another, timed. */
#include "core.h"
#include "errors.h"
#include "event.h"
#include "stream.h"

int g_nevents;

EXPORT CUresult cuEventCreate(CUevent *out, unsigned flags) {
  INJECT();
  (void)flags;
  CUresult r = usable();
  if (r)
    return r;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = calloc(1, sizeof **out);
  if (!*out)
    return CUDA_ERROR_OUT_OF_MEMORY;
  __atomic_add_fetch(&g_nevents, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  INJECT();
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  /* Like the driver, let a pending recording finish first. */
  pthread_mutex_lock(&g_events);
  while (e->reached < e->recorded)
    pthread_cond_wait(&g_reached, &g_events);
  pthread_mutex_unlock(&g_events);
  free(e);
  __atomic_sub_fetch(&g_nevents, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream s, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  struct op *op = new_op(OP_EVENT);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.event.event = e;
  /* Each recording has its own generation; a wait waits for the latest. */
  pthread_mutex_lock(&g_events);
  op->u.event.generation = ++e->recorded;
  pthread_mutex_unlock(&g_events);
  r = enqueue(s, op, per_thread);
  if (r) {
    /* Never to be reached: take the recording back. */
    pthread_mutex_lock(&g_events);
    e->recorded--;
    pthread_mutex_unlock(&g_events);
  }
  return r;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
  INJECT();
  return event_record(e, s, 0);
}

EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) {
  INJECT();
  return event_record(e, s, 1);
}

static CUresult stream_wait_event(CUstream s, CUevent e, unsigned flags,
                                  int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!e || flags)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_WAIT);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.event.event = e;
  pthread_mutex_lock(&g_events);
  op->u.event.generation = e->recorded; /* its latest recording */
  pthread_mutex_unlock(&g_events);
  return enqueue(s, op, per_thread);
}

EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  INJECT();
  return stream_wait_event(s, e, flags, 0);
}

EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e,
                                       unsigned flags) {
  INJECT();
  return stream_wait_event(s, e, flags, 1);
}

EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  INJECT();
  if (!ms || !start || !end)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_events);
  CUresult r = CUDA_SUCCESS;
  if (!start->recorded || !end->recorded)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (start->reached < start->recorded || end->reached < end->recorded)
    r = CUDA_ERROR_NOT_READY;
  else
    *ms = (float)((end->at.tv_sec - start->at.tv_sec) * 1e3 +
                  (end->at.tv_nsec - start->at.tv_nsec) / 1e6);
  pthread_mutex_unlock(&g_events);
  return r;
}
