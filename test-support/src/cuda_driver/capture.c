/*
 * Stream capture, with the driver's rules: what a capturing stream takes
 * into its graph, what invalidates a capture, which calls the capture
 * modes forbid; cuStreamBeginCapture, cuStreamEndCapture,
 * cuStreamIsCapturing and cuThreadExchangeStreamCaptureMode.
 */
#include "capture.h"
#include "core.h"
#include "errors.h"

/* Guards captures, graphs and graph executables. */
pthread_mutex_t g_graph_lock = PTHREAD_MUTEX_INITIALIZER;
struct capture *g_captures;
struct sim_graph *g_graphs;
/* The calling thread's capture interaction mode
 * (cuThreadExchangeStreamCaptureMode; CAPTURE_MODE_GLOBAL to start). */
static __thread int t_capture_mode;

void free_ops(struct op *op) {
  while (op) {
    struct op *next = op->next;
    free(op);
    op = next;
  }
}

/* Whether the handle names the legacy default stream. */
int is_legacy(CUstream h, int per_thread) {
  return h == STREAM_LEGACY || (!h && !per_thread);
}

/* The capture under way on the stream the handle names, or NULL (never
 * one of the legacy stream, which cannot capture). g_graph_lock held. */
struct capture *capture_on(CUstream h, int per_thread) {
  if (is_legacy(h, per_thread))
    return NULL;
  int ptds = !h || h == STREAM_PER_THREAD;
  for (struct capture *c = g_captures; c; c = c->next)
    if (ptds ? !c->stream && pthread_equal(c->thread, pthread_self())
             : c->stream == h)
      return c;
  return NULL;
}

/* How many captures work on the legacy stream would depend on: those of
 * blocking streams (a per-thread default stream is one); with
 * `invalidate`, invalidates them. g_graph_lock held. */
int legacy_conflicts(int invalidate) {
  int n = 0;
  for (struct capture *c = g_captures; c; c = c->next)
    if (!c->stream || !(c->stream->flags & STREAM_NON_BLOCKING)) {
      if (invalidate)
        c->status = CAPTURE_INVALIDATED;
      n++;
    }
  return n;
}

/* A potentially unsafe call (one that may synchronise implicitly: the
 * synchronous copies, cuMemAlloc and cuMemFree, cuMemHostAlloc and
 * cuMemFreeHost) is forbidden, as the driver forbids it, to a thread in
 * CU_STREAM_CAPTURE_MODE_GLOBAL when it began a capture not in
 * CU_STREAM_CAPTURE_MODE_RELAXED or another thread began one in
 * CU_STREAM_CAPTURE_MODE_GLOBAL; to one in THREAD_LOCAL only in the first
 * case; never to one in RELAXED. Those captures are invalidated. */
CUresult unsafe_call(void) {
  int mode = t_capture_mode;
  if (mode == CAPTURE_MODE_RELAXED)
    return CUDA_SUCCESS;
  int n = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture *c = g_captures; c; c = c->next) {
    int mine = pthread_equal(c->thread, pthread_self());
    if (mine ? c->mode != CAPTURE_MODE_RELAXED
             : mode == CAPTURE_MODE_GLOBAL && c->mode == CAPTURE_MODE_GLOBAL) {
      c->status = CAPTURE_INVALIDATED;
      n++;
    }
  }
  pthread_mutex_unlock(&g_graph_lock);
  return n ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* cuCtxSynchronize: never while any stream captures (every capture is
 * invalidated). */
CUresult context_sync_gate(void) {
  int n = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture *c = g_captures; c; c = c->next, n++)
    c->status = CAPTURE_INVALIDATED;
  pthread_mutex_unlock(&g_graph_lock);
  return n ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* Synchronising or querying a stream (or a synchronous copy on it): never
 * while it captures, nor the legacy stream while it would wait for a
 * capturing blocking stream; the capture is invalidated. */
CUresult sync_gate(CUstream h, int per_thread) {
  int n = 0;
  pthread_mutex_lock(&g_graph_lock);
  struct capture *c = capture_on(h, per_thread);
  if (c) {
    c->status = CAPTURE_INVALIDATED;
    n = 1;
  } else if (is_legacy(h, per_thread)) {
    n = legacy_conflicts(1);
  }
  pthread_mutex_unlock(&g_graph_lock);
  return n ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* Takes `op`, meant for a capturing stream, into its capture: copies,
 * kernels and host functions join the graph; a wait for an event (never
 * one recorded in a capture: see below) would depend on uncaptured work
 * and a stream callback cannot be captured, so either invalidates the
 * capture; event records and stream-ordered frees in a capture are not
 * simulated (CUDA_ERROR_NOT_SUPPORTED). On an invalidated capture,
 * nothing. Frees `op` unless it joins the graph. g_graph_lock held. */
CUresult capture_op(struct capture *c, struct op *op) {
  CUresult r;
  if (c->status == CAPTURE_INVALIDATED) {
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else {
    switch (op->kind) {
    case OP_HTOD:
    case OP_DTOH:
    case OP_DTOD:
    case OP_KERNEL:
    case OP_HOSTFN:
      op->next = NULL;
      if (c->graph.tail)
        c->graph.tail->next = op;
      else
        c->graph.head = op;
      c->graph.tail = op;
      return CUDA_SUCCESS;
    case OP_WAIT:
      c->status = CAPTURE_INVALIDATED;
      r = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
      break;
    case OP_CALLBACK:
      c->status = CAPTURE_INVALIDATED;
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      break;
    default:
      r = CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  free(op);
  return r;
}

/* CU_STREAM_CAPTURE_STATUS_NONE, _ACTIVE or _INVALIDATED. Asked of the
 * legacy stream while a blocking stream captures, the driver's
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (which invalidates nothing). */
static CUresult stream_is_capturing(CUstream h, int *status,
                                    int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!status)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_graph_lock);
  struct capture *c = capture_on(h, per_thread);
  if (is_legacy(h, per_thread) && legacy_conflicts(0))
    r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  else
    *status = c ? c->status : CAPTURE_NONE;
  pthread_mutex_unlock(&g_graph_lock);
  return r;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status) {
  INJECT();
  return stream_is_capturing(s, status, 0);
}

EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, int *status) {
  INJECT();
  return stream_is_capturing(s, status, 1);
}

static CUresult begin_capture(CUstream h, int mode, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (mode < CAPTURE_MODE_GLOBAL || mode > CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  /* The legacy stream cannot capture. */
  if (is_legacy(h, per_thread))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  struct capture *c = calloc(1, sizeof *c);
  if (!c)
    return CUDA_ERROR_OUT_OF_MEMORY;
  c->stream = !h || h == STREAM_PER_THREAD ? NULL : h;
  c->thread = pthread_self();
  c->mode = mode;
  c->status = CAPTURE_ACTIVE;
  pthread_mutex_lock(&g_graph_lock);
  if (capture_on(h, per_thread)) {
    r = CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
  } else {
    c->next = g_captures;
    g_captures = c;
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    free(c);
  return r;
}

/* CUDA 10.1's, with a mode. */
EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode) {
  INJECT();
  return begin_capture(s, mode, 0);
}

EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int mode) {
  INJECT();
  return begin_capture(s, mode, 1);
}

/* CUDA 10.0's, without one: CU_STREAM_CAPTURE_MODE_GLOBAL. */
EXPORT CUresult cuStreamBeginCapture(CUstream s) {
  INJECT();
  return begin_capture(s, CAPTURE_MODE_GLOBAL, 0);
}

EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) {
  INJECT();
  return begin_capture(s, CAPTURE_MODE_GLOBAL, 1);
}

/* Ends the capture under way on the stream: its graph, or, when it was
 * invalidated, NULL and CUDA_ERROR_STREAM_CAPTURE_INVALIDATED; either way
 * the stream no longer captures. A capture not begun in
 * CU_STREAM_CAPTURE_MODE_RELAXED ends only in the thread that began it. */
static CUresult end_capture(CUstream h, CUgraph *out, int per_thread) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  struct sim_graph *g = calloc(1, sizeof *g);
  if (!g)
    return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_graph_lock);
  struct capture *c = capture_on(h, per_thread);
  if (!c) {
    r = CUDA_ERROR_ILLEGAL_STATE; /* not capturing */
  } else if (c->mode != CAPTURE_MODE_RELAXED &&
             !pthread_equal(c->thread, pthread_self())) {
    r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  } else {
    for (struct capture **p = &g_captures; *p; p = &(*p)->next)
      if (*p == c) {
        *p = c->next;
        break;
      }
    if (c->status == CAPTURE_INVALIDATED) {
      r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
      free_ops(c->graph.head);
    } else {
      g->head = c->graph.head;
      g->tail = c->graph.tail;
      g->next = g_graphs;
      g_graphs = g;
    }
    free(c);
    *out = r ? NULL : g;
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    free(g);
  return r;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *graph) {
  INJECT();
  return end_capture(s, graph, 0);
}

EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph) {
  INJECT();
  return end_capture(s, graph, 1);
}

/* The calling thread's capture interaction mode (see unsafe_call): sets
 * *mode and hands back the one it replaces. */
EXPORT CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!mode || *mode < CAPTURE_MODE_GLOBAL || *mode > CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  int old = t_capture_mode;
  t_capture_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}
