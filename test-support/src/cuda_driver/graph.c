/*
 * Graphs (what a capture took) and their executables: instantiated,
 * launched onto a stream (or into its capture) and destroyed; kernels of
 * a module unloaded since make them unusable.
 */
#include "capture.h"
#include "core.h"
#include "errors.h"
#include "graph.h"
#include "stream.h"

/* Every live graph executable. */
static struct sim_graph_exec *g_execs;

/* A copy of the chain at `from`, or NULL with *ok 0 when memory ran out. */
static struct op *copy_ops(const struct op *from, int *ok) {
  struct op *head = NULL, **tail = &head;
  *ok = 1;
  for (; from; from = from->next) {
    struct op *op = malloc(sizeof *op);
    if (!op) {
      free_ops(head);
      *ok = 0;
      return NULL;
    }
    memcpy(op, from, sizeof *op);
    op->next = NULL;
    *tail = op;
    tail = &op->next;
  }
  return head;
}

/* Whether the chain launches a kernel of a module since unloaded. */
static int has_dead_kernel(const struct op *op) {
  for (; op; op = op->next)
    if (op->kind == OP_KERNEL && !op->u.launch.module)
      return 1;
  return 0;
}

static void forget_ops(struct op *op, CUmodule m) {
  for (; op; op = op->next)
    if (op->kind == OP_KERNEL && op->u.launch.module == m)
      op->u.launch.module = NULL;
}

void forget_module(CUmodule m) {
  pthread_mutex_lock(&g_graph_lock);
  for (struct capture *c = g_captures; c; c = c->next)
    forget_ops(c->graph.head, m);
  for (struct sim_graph *g = g_graphs; g; g = g->next)
    forget_ops(g->head, m);
  for (struct sim_graph_exec *e = g_execs; e; e = e->next)
    forget_ops(e->head, m);
  pthread_mutex_unlock(&g_graph_lock);
}

static int graph_live(CUgraph g) {
  for (struct sim_graph *l = g_graphs; l; l = l->next)
    if (l == g)
      return 1;
  return 0;
}

static int exec_live(CUgraphExec e) {
  for (struct sim_graph_exec *l = g_execs; l; l = l->next)
    if (l == e)
      return 1;
  return 0;
}

/* An executable copy of the graph, independent of it from then on. A
 * graph with a kernel whose module was unloaded is
 * CUDA_ERROR_INVALID_HANDLE; device launch is not simulated. */
EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g,
                                            unsigned long long flags) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!out || (flags & ~(unsigned long long)(GRAPH_AUTO_FREE_ON_LAUNCH |
                                             GRAPH_DEVICE_LAUNCH |
                                             GRAPH_USE_NODE_PRIORITY)))
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & GRAPH_DEVICE_LAUNCH)
    return CUDA_ERROR_NOT_SUPPORTED;
  struct sim_graph_exec *e = calloc(1, sizeof *e);
  if (!e)
    return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&g_graph_lock);
  if (!g || !graph_live(g)) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else if (has_dead_kernel(g->head)) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else {
    int ok;
    e->head = copy_ops(g->head, &ok);
    if (ok) {
      e->next = g_execs;
      g_execs = e;
    } else {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    free(e);
  else
    *out = e;
  return r;
}

/* Queues the graph's operations, in capture order, on the stream (as any
 * work queued there, with the legacy stream's synchronisation), after the
 * previous launch of the same executable wherever that went; on a
 * capturing stream, into its capture. A kernel whose module was unloaded
 * since makes it CUDA_ERROR_INVALID_HANDLE. */
static CUresult graph_launch(CUgraphExec e, CUstream h, int per_thread) {
  CUresult r = usable();
  if (r)
    return r;
  struct op *ops = NULL;
  int capturing = 0, ok = 1;
  CUstream last = NULL;
  pthread_mutex_lock(&g_graph_lock);
  if (!e || !exec_live(e)) {
    r = CUDA_ERROR_INVALID_VALUE;
  } else if (has_dead_kernel(e->head)) {
    r = CUDA_ERROR_INVALID_HANDLE;
  } else {
    ops = copy_ops(e->head, &ok);
    if (!ok)
      r = CUDA_ERROR_OUT_OF_MEMORY;
    capturing = capture_on(h, per_thread) != NULL;
    last = e->last;
  }
  pthread_mutex_unlock(&g_graph_lock);
  if (r)
    return r;
  CUstream s = stream_of(h, per_thread, NULL);
  if (!s) {
    free_ops(ops);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!capturing && last && last != s) {
    /* A destroyed stream finished its work. */
    pthread_mutex_lock(&g_streams_lock);
    for (struct sim_stream *t = g_streams; t && ok; t = t->next)
      if (t == last)
        ok = order_after(s, t);
    pthread_mutex_unlock(&g_streams_lock);
    if (!ok) {
      free_ops(ops);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  while (ops) {
    struct op *next = ops->next;
    r = enqueue(h, ops, per_thread);
    ops = next;
    if (r) {
      free_ops(ops);
      return r;
    }
  }
  if (!capturing) {
    pthread_mutex_lock(&g_graph_lock);
    if (exec_live(e))
      e->last = s;
    pthread_mutex_unlock(&g_graph_lock);
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  INJECT();
  return graph_launch(e, s, 0);
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) {
  INJECT();
  return graph_launch(e, s, 1);
}

/* Launches already queued run to the end, as on the driver. */
EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  int found = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct sim_graph_exec **p = &g_execs; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&g_graph_lock);
  if (!found)
    return CUDA_ERROR_INVALID_VALUE;
  free_ops(e->head);
  free(e);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(CUgraph g) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  int found = 0;
  pthread_mutex_lock(&g_graph_lock);
  for (struct sim_graph **p = &g_graphs; *p; p = &(*p)->next)
    if (*p == g) {
      *p = g->next;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&g_graph_lock);
  if (!found)
    return CUDA_ERROR_INVALID_VALUE;
  free_ops(g->head);
  free(g);
  return CUDA_SUCCESS;
}
