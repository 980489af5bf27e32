/*
 * Streams: one worker thread each, running the operations queued on
 * it in order; the default streams (legacy and per-thread) and the
 * legacy stream's implicit synchronisation; stream callbacks and host
 * functions; synchronising a stream or the whole context.
 */
#include "capture.h"
#include "core.h"
#include "errors.h"
#include "kernels.h"
#include "ranges.h"
#include "stream.h"

/* Every event's progress: a stream reaching a recording wakes the streams
 * and threads waiting for it. */
pthread_mutex_t g_events = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t g_reached = PTHREAD_COND_INITIALIZER;

/* Each stream worker's random delays (see reprise_sim_set_copy_delay_us). */
static __thread unsigned t_seed;

/* Every live stream, to check frees against queued work. */
pthread_mutex_t g_streams_lock = PTHREAD_MUTEX_INITIALIZER;
struct sim_stream *g_streams;

/* Whether `op` uses [base, base + size) of host (or device) memory; with
 * host == 2, whether it is a launch of a kernel of module `base`. */
static int op_uses(const struct op *op, uintptr_t base, size_t size,
                   int host) {
  if (host == 2)
    return op->kind == OP_KERNEL && (uintptr_t)op->u.launch.module == base;
  if (op->kind != OP_HTOD && op->kind != OP_DTOH && op->kind != OP_DTOD)
    return 0;
  struct range r = {base, size};
  uintptr_t src = op->u.copy.src, dst = op->u.copy.dst;
  size_t len = op->u.copy.len;
  int src_host = op->kind == OP_HTOD, dst_host = op->kind == OP_DTOH;
  return (src_host == host && overlaps(&r, 1, src, len)) ||
         (dst_host == host && overlaps(&r, 1, dst, len));
}

/* Aborts when a queued or running copy still uses [base, base + size) of
 * host (or device) memory that `call` is about to free. */
void check_unused(const char *call, uintptr_t base, size_t size,
                  int host) {
  pthread_mutex_lock(&g_streams_lock);
  for (struct sim_stream *s = g_streams; s; s = s->next) {
    pthread_mutex_lock(&s->lock);
    int used = s->running && op_uses(s->running, base, size, host);
    for (struct op *op = s->head; op && !used; op = op->next)
      used = op_uses(op, base, size, host);
    pthread_mutex_unlock(&s->lock);
    if (used) {
      if (host == 2)
        fprintf(stderr,
                "simulated CUDA driver: %s(%#lx) while a kernel of that "
                "module is queued or running\n",
                call, (unsigned long)base);
      else
        fprintf(stderr,
                "simulated CUDA driver: %s(%#lx, %zu bytes) while a queued "
                "copy still uses that memory\n",
                call, (unsigned long)base, size);
      abort();
    }
  }
  pthread_mutex_unlock(&g_streams_lock);
}

/* Simulator only: a status the next stream callback is given instead of
 * the context's (see reprise_sim_set_callback_status). */
static CUresult g_callback_status;

/* Simulator only: hands the next stream callback `code` as its status,
 * without spoiling the context, as a driver reporting a failure only to
 * the callback would. */
EXPORT void reprise_sim_set_callback_status(int code) {
  __atomic_store_n(&g_callback_status, code, __ATOMIC_RELAXED);
}

static void run_op(CUstream s, struct op *op) {
  int faulted = sticky() != CUDA_SUCCESS;
  switch (op->kind) {
  case OP_HTOD:
  case OP_DTOH:
  case OP_DTOD: {
    if (faulted)
      break;
    int src_ok = op->kind == OP_HTOD ||
                 accessible(op->u.copy.src, op->u.copy.len);
    int dst_ok = op->kind == OP_DTOH ||
                 accessible(op->u.copy.dst, op->u.copy.len);
    if (!src_ok || !dst_ok) {
      fault();
      break;
    }
    unsigned delay = __atomic_load_n(&g_copy_delay_us, __ATOMIC_RELAXED);
    if (delay && op->kind != OP_HTOD)
      usleep(rand_r(&t_seed) % (delay + 1));
    /* A copy from page-locked memory reads its source when the stream
     * reaches it, not when it was queued: the driver API documents
     * cuMemcpyHtoDAsync from pinned memory as fully asynchronous ("API
     * synchronization behavior"), so the caller may not touch the source
     * until the stream has passed the copy. (From pageable memory the
     * driver may stage the bytes before it returns: never delayed.) */
    unsigned upload = __atomic_load_n(&g_upload_delay_us, __ATOMIC_RELAXED);
    if (upload && op->kind == OP_HTOD && op->u.copy.pinned)
      usleep(rand_r(&t_seed) % (upload + 1));
    memcpy((void *)op->u.copy.dst, (const void *)op->u.copy.src,
           op->u.copy.len);
    __atomic_fetch_add(&g_copied_bytes[op->kind == OP_HTOD   ? 0
                                       : op->kind == OP_DTOH ? 1
                                                             : 2],
                       (unsigned long long)op->u.copy.len, __ATOMIC_RELAXED);
    break;
  }
  case OP_KERNEL: {
    if (op->u.launch.delay_us)
      usleep(op->u.launch.delay_us);
    if (!faulted)
      run_kernel(&op->u.launch);
    break;
  }
  case OP_EVENT:
    pthread_mutex_lock(&g_events);
    clock_gettime(CLOCK_MONOTONIC, &op->u.event.event->at);
    if (op->u.event.event->reached < op->u.event.generation)
      op->u.event.event->reached = op->u.event.generation;
    pthread_cond_broadcast(&g_reached);
    pthread_mutex_unlock(&g_events);
    break;
  case OP_WAIT:
    pthread_mutex_lock(&g_events);
    while (op->u.event.event->reached < op->u.event.generation)
      pthread_cond_wait(&g_reached, &g_events);
    pthread_mutex_unlock(&g_events);
    if (op->u.event.owned)
      free(op->u.event.event);
    break;
  case OP_FREE:
    op->u.free.release(op->u.free.ptr);
    break;
  case OP_CALLBACK: {
    /* Stream callbacks run after a fault too, and are told of it. */
    CUresult status = __atomic_exchange_n(&g_callback_status, CUDA_SUCCESS,
                                          __ATOMIC_RELAXED);
    op->u.callback.fn(s, status ? status : sticky(), op->u.callback.data);
    break;
  }
  case OP_HOSTFN:
    /* Host functions do not run once the context has faulted. */
    if (!faulted)
      op->u.hostfn.fn(op->u.hostfn.data);
    break;
  }
}

static void *worker(void *arg) {
  CUstream s = arg;
  t_current = &g_ctx;
  /* A new sequence for every worker: streams made one after the other
   * often get the same address, so that cannot be the seed. */
  static unsigned workers;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  t_seed = (unsigned)now.tv_nsec ^
           (__atomic_add_fetch(&workers, 1, __ATOMIC_RELAXED) * 0x9e3779b9u);
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->stop)
      pthread_cond_wait(&s->work, &s->lock);
    if (!s->head)
      break;
    struct op *op = s->head;
    s->head = op->next;
    if (!s->head)
      s->tail = NULL;
    s->running = op;
    pthread_mutex_unlock(&s->lock);
    run_op(s, op);
    pthread_mutex_lock(&s->lock);
    s->running = NULL;
    free(op);
    s->pending--;
    if (s->pending == 0)
      pthread_cond_broadcast(&s->idle);
    pthread_mutex_lock(&g_ctx.lock);
    if (--g_ctx.busy == 0)
      pthread_cond_broadcast(&g_ctx.idle);
    pthread_mutex_unlock(&g_ctx.lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* Queues `op` on stream `s` as it is. */
static void enqueue_raw(CUstream s, struct op *op) {
  op->next = NULL;
  pthread_mutex_lock(&s->lock);
  if (s->tail)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
  s->pending++;
  pthread_mutex_lock(&g_ctx.lock);
  g_ctx.busy++;
  pthread_mutex_unlock(&g_ctx.lock);
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->lock);
}

struct op *new_op(enum op_kind kind) {
  struct op *op = calloc(1, sizeof *op);
  if (op)
    op->kind = kind;
  return op;
}

static CUstream new_stream(unsigned flags) {
  CUstream s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->flags = flags;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->idle, NULL);
  if (pthread_create(&s->worker, NULL, worker, s) != 0) {
    free(s);
    return NULL;
  }
  pthread_mutex_lock(&g_streams_lock);
  s->next = g_streams;
  g_streams = s;
  pthread_mutex_unlock(&g_streams_lock);
  return s;
}

/* The legacy default stream, made at first use. */
static pthread_mutex_t g_default_lock = PTHREAD_MUTEX_INITIALIZER;
CUstream g_default;

static CUstream default_stream(void) {
  pthread_mutex_lock(&g_default_lock);
  if (!g_default) {
    CUstream s = new_stream(0);
    if (s)
      s->implicit = 1;
    __atomic_store_n(&g_default, s, __ATOMIC_RELEASE);
  }
  CUstream s = g_default;
  pthread_mutex_unlock(&g_default_lock);
  return s;
}

/* Each thread's per-thread default stream, made at its first use and
 * destroyed when the thread exits (after the work queued on it): a
 * blocking stream of its own, which synchronises with the legacy default
 * stream as any blocking stream does (CUDA Driver API, "Stream
 * synchronization behavior": "The per-thread default stream is not a
 * non-blocking stream and will synchronize with the legacy default stream
 * if both are used in a program", and each host thread has its own). */
static __thread CUstream t_per_thread;
static pthread_key_t g_per_thread_key;
static pthread_once_t g_per_thread_once = PTHREAD_ONCE_INIT;

static void destroy_stream(CUstream s);

static void per_thread_exit(void *s) { destroy_stream(s); }

static void per_thread_key(void) {
  pthread_key_create(&g_per_thread_key, per_thread_exit);
}

static CUstream per_thread_stream(void) {
  if (!t_per_thread) {
    pthread_once(&g_per_thread_once, per_thread_key);
    CUstream s = new_stream(0);
    if (!s)
      return NULL;
    s->implicit = 1;
    pthread_setspecific(g_per_thread_key, s);
    t_per_thread = s;
  }
  return t_per_thread;
}

static int is_default_handle(CUstream h) {
  return !h || h == STREAM_LEGACY || h == STREAM_PER_THREAD ||
         h == __atomic_load_n(&g_default, __ATOMIC_ACQUIRE) ||
         h == t_per_thread;
}

/* The stream a handle names: 0 the legacy default stream (the calling
 * thread's per-thread one in a _ptsz/_ptds call), CU_STREAM_LEGACY and
 * CU_STREAM_PER_THREAD those whatever the call; *legacy tells whether the
 * legacy stream's synchronisation with the blocking streams applies. NULL
 * when the default stream cannot be made. */
CUstream stream_of(CUstream h, int per_thread, int *legacy) {
  if (legacy)
    *legacy = h == STREAM_LEGACY || (!h && !per_thread);
  if (h == STREAM_PER_THREAD || (!h && per_thread))
    return per_thread_stream();
  if (!h || h == STREAM_LEGACY)
    return default_stream();
  return h;
}

static int pending_of(CUstream s) {
  pthread_mutex_lock(&s->lock);
  int n = s->pending;
  pthread_mutex_unlock(&s->lock);
  return n;
}

/* Makes `waiter` wait, in order, for everything queued on `s` so far,
 * through an event of the simulator's own (freed by the wait). */
int order_after(CUstream waiter, CUstream s) {
  struct sim_event *e = calloc(1, sizeof *e);
  struct op *rec = new_op(OP_EVENT), *wait = new_op(OP_WAIT);
  if (!e || !rec || !wait) {
    free(e);
    free(rec);
    free(wait);
    return 0;
  }
  e->recorded = 1;
  rec->u.event.event = wait->u.event.event = e;
  rec->u.event.generation = wait->u.event.generation = 1;
  wait->u.event.owned = 1;
  enqueue_raw(s, rec);
  enqueue_raw(waiter, wait);
  return 1;
}

/* Queues `op` on the stream handle `h` names (see stream_of), with the
 * legacy default stream's implicit synchronisation: work on it waits for
 * what every blocking stream has queued, and work on a blocking stream
 * waits for what it has queued. */
CUresult enqueue(CUstream h, struct op *op, int per_thread) {
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  /* A capturing stream takes the work into its graph instead; the legacy
   * stream takes none while it would depend on a capture. */
  CUresult r = CUDA_SUCCESS;
  int captured = 0;
  pthread_mutex_lock(&g_graph_lock);
  if (is_legacy(h, per_thread)) {
    if (legacy_conflicts(1))
      r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  } else {
    struct capture *c = capture_on(h, per_thread);
    if (c) {
      captured = 1;
      r = capture_op(c, op);
    }
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (captured)
    return r;
  if (r) {
    free(op);
    return r;
  }
  int legacy;
  CUstream s = stream_of(h, per_thread, &legacy);
  if (!s) {
    free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUstream def = __atomic_load_n(&g_default, __ATOMIC_ACQUIRE);
  int ok = 1;
  if (s == def && legacy) {
    pthread_mutex_lock(&g_streams_lock);
    for (struct sim_stream *t = g_streams; t && ok; t = t->next)
      if (t != s && !(t->flags & STREAM_NON_BLOCKING) && pending_of(t))
        ok = order_after(s, t);
    pthread_mutex_unlock(&g_streams_lock);
  } else if (def && s != def && !(s->flags & STREAM_NON_BLOCKING) &&
             pending_of(def)) {
    ok = order_after(s, def);
  }
  if (!ok) {
    free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  enqueue_raw(s, op);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  CUstream s = new_stream(flags);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *out = s;
  return CUDA_SUCCESS;
}

/* The stream priorities cuStreamCreateWithPriority takes, as an sm_90
 * reports them: 0 the least, -5 the greatest (lower is higher). */
#define PRIORITY_LEAST 0
#define PRIORITY_GREATEST (-5)

/* CUDA Driver API, Stream Management, cuStreamCreateWithPriority: as
 * cuStreamCreate, with a priority that "follows a convention where lower
 * numbers imply greater priorities" and that is clamped to the range
 * cuCtxGetStreamPriorityRange reports. The simulator runs every stream's
 * work as it comes, so the priority changes nothing else. */
EXPORT CUresult cuStreamCreateWithPriority(CUstream *out, unsigned flags,
                                           int priority) {
  INJECT();
  (void)priority;
  CUresult r = usable();
  if (r)
    return r;
  if (!out || (flags & ~(unsigned)STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  CUstream s = new_stream(flags);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *out = s;
  return CUDA_SUCCESS;
}

/* CUDA Driver API, Context Management, cuCtxGetStreamPriorityRange: either
 * pointer may be NULL. */
EXPORT CUresult cuCtxGetStreamPriorityRange(int *least, int *greatest) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (least)
    *least = PRIORITY_LEAST;
  if (greatest)
    *greatest = PRIORITY_GREATEST;
  return CUDA_SUCCESS;
}

void wait_idle(CUstream s) {
  pthread_mutex_lock(&s->lock);
  while (s->pending > 0)
    pthread_cond_wait(&s->idle, &s->lock);
  pthread_mutex_unlock(&s->lock);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  INJECT();
  if (is_default_handle(s))
    return CUDA_ERROR_INVALID_HANDLE;
  /* A capture under way on it ends with it. */
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture **p = &g_captures; *p; p = &(*p)->next)
    if ((*p)->stream == s) {
      struct capture *c = *p;
      *p = c->next;
      free_ops(c->graph.head);
      free(c);
      break;
    }
  pthread_mutex_unlock(&g_graph_lock);
  destroy_stream(s);
  return CUDA_SUCCESS;
}

/* Stops the stream's worker once it has run what is queued, and frees
 * the stream. */
static void destroy_stream(CUstream s) {
  pthread_mutex_lock(&s->lock);
  s->stop = 1; /* the worker finishes what is queued first */
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->worker, NULL);
  pthread_mutex_lock(&g_streams_lock);
  for (struct sim_stream **p = &g_streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  pthread_mutex_unlock(&g_streams_lock);
  free(s);
}

static CUresult stream_query(CUstream h, int per_thread) {
  CUresult r = sync_gate(h, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(h, per_thread, NULL);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = sticky();
  if (r)
    return r;
  pthread_mutex_lock(&s->lock);
  int busy = s->pending > 0;
  pthread_mutex_unlock(&s->lock);
  return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

EXPORT CUresult cuStreamQuery(CUstream s) {
  INJECT();
  return stream_query(s, 0);
}

EXPORT CUresult cuStreamQuery_ptsz(CUstream s) {
  INJECT();
  return stream_query(s, 1);
}

static CUresult stream_synchronize(CUstream h, int per_thread) {
  CUresult r = sync_gate(h, per_thread);
  if (r)
    return r;
  CUstream s = stream_of(h, per_thread, NULL);
  if (!s)
    return CUDA_ERROR_OUT_OF_MEMORY;
  wait_idle(s);
  return sticky();
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
  INJECT();
  return stream_synchronize(s, 0);
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
  INJECT();
  return stream_synchronize(s, 1);
}

EXPORT CUresult cuCtxSynchronize(void) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!t_current || !ctx_live(t_current))
    return CUDA_ERROR_INVALID_CONTEXT;
  /* Never while a stream captures: it would wait for work that is not
   * queued. */
  CUresult r = context_sync_gate();
  if (r)
    return r;
  pthread_mutex_lock(&g_ctx.lock);
  while (g_ctx.busy > 0)
    pthread_cond_wait(&g_ctx.idle, &g_ctx.lock);
  r = g_ctx.sticky;
  pthread_mutex_unlock(&g_ctx.lock);
  return r;
}

#ifndef SIM_NO_STREAM_CALLBACK
static CUresult stream_add_callback(CUstream s, CUstreamCallback fn,
                                    void *data, unsigned flags,
                                    int per_thread) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!fn || flags)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_CALLBACK);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.callback.fn = fn;
  op->u.callback.data = data;
  return enqueue(s, op, per_thread);
}

EXPORT CUresult cuStreamAddCallback(CUstream s, CUstreamCallback fn,
                                    void *data, unsigned flags) {
  INJECT();
  return stream_add_callback(s, fn, data, flags, 0);
}

EXPORT CUresult cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback fn,
                                         void *data, unsigned flags) {
  INJECT();
  return stream_add_callback(s, fn, data, flags, 1);
}
#endif

static CUresult launch_host_func(CUstream s, CUhostFn fn, void *data,
                                 int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  if (!fn)
    return CUDA_ERROR_INVALID_VALUE;
  struct op *op = new_op(OP_HOSTFN);
  if (!op)
    return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.hostfn.fn = fn;
  op->u.hostfn.data = data;
  return enqueue(s, op, per_thread);
}

EXPORT CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *data) {
  INJECT();
  return launch_host_func(s, fn, data, 0);
}

EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *data) {
  INJECT();
  return launch_host_func(s, fn, data, 1);
}
