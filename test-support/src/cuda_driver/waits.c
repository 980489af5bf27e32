/* Waiting for events from the host: cuEventSynchronize and
 * cuEventQuery. */
#include "core.h"
#include "errors.h"
#include "stream.h"

/* CUDA Driver API, Event Management, cuEventSynchronize: waits for the
 * event's latest recording to be reached; an event never recorded is
 * CUDA_SUCCESS at once. A fault before it is the call's error, as for
 * every synchronising call. */
EXPORT CUresult cuEventSynchronize(CUevent e) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_events);
  while (e->reached < e->recorded)
    pthread_cond_wait(&g_reached, &g_events);
  pthread_mutex_unlock(&g_events);
  return sticky();
}

/* CUDA Driver API, Event Management, cuEventQuery: CUDA_SUCCESS once the
 * latest recording is reached (or when the event was never recorded),
 * CUDA_ERROR_NOT_READY before. */
EXPORT CUresult cuEventQuery(CUevent e) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!e)
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&g_events);
  int ready = e->reached >= e->recorded;
  pthread_mutex_unlock(&g_events);
  if (!ready)
    return CUDA_ERROR_NOT_READY;
  return sticky();
}
