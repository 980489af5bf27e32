/* stream.c: streams, their workers and the default streams. */
#ifndef SIM_CUDA_STREAM_H
#define SIM_CUDA_STREAM_H

#include "sim.h"

#pragma GCC visibility push(hidden)

extern pthread_mutex_t g_streams_lock;
extern struct sim_stream *g_streams;
/* The default stream, once made. */
extern CUstream g_default;
/* Aborts when a queued or running copy still uses [base, base + size) of
 * host (or device) memory that `call` is about to free. */
void check_unused(const char *call, uintptr_t base, size_t size, int host);
struct op *new_op(enum op_kind kind);
CUstream stream_of(CUstream h, int per_thread, int *legacy);
int order_after(CUstream waiter, CUstream s);
CUresult enqueue(CUstream h, struct op *op, int per_thread);
void wait_idle(CUstream s);
/* Guards every event's progress; g_reached is broadcast whenever a stream
 * reaches an event's recording. */
extern pthread_mutex_t g_events;
extern pthread_cond_t g_reached;

#pragma GCC visibility pop

#endif
