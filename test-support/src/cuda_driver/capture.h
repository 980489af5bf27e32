/* capture.c: stream capture. */
#ifndef SIM_CUDA_CAPTURE_H
#define SIM_CUDA_CAPTURE_H

#include "sim.h"

#pragma GCC visibility push(hidden)

/* g_graph_lock guards the captures, the graphs and graph executables. */
extern pthread_mutex_t g_graph_lock;
extern struct capture *g_captures;
extern struct sim_graph *g_graphs;
void free_ops(struct op *op);
int is_legacy(CUstream h, int per_thread);
struct capture *capture_on(CUstream h, int per_thread);
int legacy_conflicts(int invalidate);
/* Whether the calling thread may make a potentially unsafe call now, and
 * whether anything may synchronise the whole context; each invalidates the
 * captures that forbid it and returns
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult unsafe_call(void);
CUresult context_sync_gate(void);
CUresult sync_gate(CUstream h, int per_thread);
CUresult capture_op(struct capture *c, struct op *op);

#pragma GCC visibility pop

#endif
