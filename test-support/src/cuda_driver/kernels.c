/*
 * The fixture kernels the simulator runs, as C (every memory access
 * checked), the table that names them, and the interpreter that runs a
 * launch block by block, phase by phase.
 */
#include "core.h"
#include "kernels.h"
#include "ranges.h"
/* One thread per block runs the chunk-hashing kernel: no barrier to wait at. */
#define B3_SYNC() ((void)0)
#include "blake3_chunks.h"

/* A checked view of `len` bytes of device memory at `addr`, or NULL (and a
 * fault) when the kernel may not touch them. */
static void *dev(struct launch *l, uint64_t addr, size_t len) {
  if (!accessible((uintptr_t)addr, len)) {
    l->fault = 1;
    return NULL;
  }
  return (void *)(uintptr_t)addr;
}

/* A checked view of `len` bytes at `offset` of the block's dynamic shared
 * memory, or NULL (and a fault) beyond the launch's size. */
static void *smem(struct launch *l, uint64_t offset, size_t len) {
  if (offset > l->shared || len > l->shared - offset) {
    l->fault = 1;
    return NULL;
  }
  return l->smem + offset;
}

static void *global(struct launch *l, const char *name, size_t len) {
  for (int i = 0; i < l->module->nglobals; i++)
    if (strcmp(l->module->globals[i].name, name) == 0)
      return dev(l, (uintptr_t)l->module->globals[i].data, len);
  l->fault = 1;
  return NULL;
}

#define PARAM(l, i, type)                                                      \
  ({                                                                           \
    type v_;                                                                   \
    memcpy(&v_, (l)->params + (l)->def->params[i].offset, sizeof v_);          \
    v_;                                                                        \
  })

/* saxpy.cu: y[i] = a * x[i] + y[i] + bias; thread 0 counts the launch. */
static void k_saxpy(struct launch *l, const struct thread_index *t) {
  float a = PARAM(l, 0, float);
  uint64_t x = PARAM(l, 1, uint64_t), y = PARAM(l, 2, uint64_t);
  int n = PARAM(l, 3, int);
  int i = (int)(t->bid[0] * t->bdim[0] + t->tid[0]);
  if (i == 0) {
    unsigned *launches = global(l, "launches", 4);
    if (!launches)
      return;
    ++*launches;
  }
  if (i < n) {
    float *px = dev(l, x + 4 * (uint64_t)i, 4);
    float *py = dev(l, y + 4 * (uint64_t)i, 4);
    float *bias = global(l, "bias", 4);
    if (px && py && bias)
      *py = a * *px + *py + *bias;
  }
}

/* mixed.cu: out[i] = i*k + s + p.a + p.b + p.c + p.d + table[i % 16]. */
static void k_mixed(struct launch *l, const struct thread_index *t) {
  int k = PARAM(l, 0, int);
  float s = PARAM(l, 1, float);
  struct {
    float a, b, c;
    int d;
  } p = PARAM(l, 2, typeof(p));
  uint64_t out = PARAM(l, 3, uint64_t);
  int i = (int)(t->bid[0] * t->bdim[0] + t->tid[0]);
  int *table = global(l, "table", 64);
  float *o = dev(l, out + 4 * (uint64_t)i, 4);
  if (table && o)
    *o = (float)(i * k) + s + p.a + p.b + p.c + (float)p.d +
         (float)table[i % 16];
}

/* grid2d.cu: out[y * w + x] = x * scale[0] + y * scale[1]. */
static void k_grid2d(struct launch *l, const struct thread_index *t) {
  uint64_t out = PARAM(l, 0, uint64_t);
  unsigned w = PARAM(l, 1, unsigned), h = PARAM(l, 2, unsigned);
  unsigned x = t->bid[0] * t->bdim[0] + t->tid[0];
  unsigned y = t->bid[1] * t->bdim[1] + t->tid[1];
  if (x < w && y < h) {
    unsigned *scale = global(l, "scale", 8);
    unsigned *o = dev(l, out + 4 * ((uint64_t)y * w + x), 4);
    if (scale && o)
      *o = x * scale[0] + y * scale[1];
  }
}

/* shared_reverse.cu: each block reverses its slice of data (per_block
 * words, fewer in the last) through dynamic shared memory, with threads and
 * blocks numbered x-fastest over 3-D blocks and grids. Phase 0 loads the
 * tile, phase 1 (after __syncthreads) writes it back mirrored. */
static void k_shared_reverse(struct launch *l, const struct thread_index *t) {
  uint64_t data = PARAM(l, 0, uint64_t);
  unsigned per_block = PARAM(l, 1, unsigned), n = PARAM(l, 2, unsigned);
  unsigned threads = t->bdim[0] * t->bdim[1] * t->bdim[2];
  unsigned tid = (t->tid[2] * t->bdim[1] + t->tid[1]) * t->bdim[0] + t->tid[0];
  unsigned b = (t->bid[2] * t->gdim[1] + t->bid[1]) * t->gdim[0] + t->bid[0];
  unsigned base = b * per_block;
  unsigned len = base < n ? n - base : 0;
  if (len > per_block)
    len = per_block;
  for (unsigned i = tid; i < len; i += threads) {
    unsigned *d = dev(l, data + 4 * ((uint64_t)base + i), 4);
    unsigned *tile = smem(l, 4 * (uint64_t)(t->phase ? len - 1 - i : i), 4);
    if (!d || !tile)
      return;
    if (t->phase == 0)
      *tile = *d;
    else
      *d = *tile;
  }
}

/* omp_saxpy.c (clang-19's OpenMP code, SPMD): parameters dyn_ptr, n, x, y,
 * 8 bytes each. Team b takes the chunks of 128 iterations at b*128,
 * (b + teams)*128, ...; its threads take every blockDim-th iteration of a
 * chunk. dyn_ptr is never read: the region has no reductions. */
static void k_omp_saxpy(struct launch *l, const struct thread_index *t) {
  int64_t n = PARAM(l, 1, int64_t);
  uint64_t x = PARAM(l, 2, uint64_t), y = PARAM(l, 3, uint64_t);
  for (int64_t c = (int64_t)t->bid[0] * 128; c < n;
       c += (int64_t)t->gdim[0] * 128)
    for (int64_t i = c + t->tid[0]; i < n && i < c + 128; i += t->bdim[0]) {
      float *px = dev(l, x + 4 * (uint64_t)i, 4);
      float *py = dev(l, y + 4 * (uint64_t)i, 4);
      if (!px || !py)
        return;
      *py = 2.0f * *px + *py;
    }
}

/* omp_sum.c: *sum += x[0] + ... + x[n-1] (parameters dyn_ptr, n, sum, x).
 * Phase 0: each thread adds its iterations (chunked as omp_saxpy) to the
 * block's partial sum. Phase 1, thread 0, as the device runtime's
 * __kmpc_nvptx_teams_reduce_nowait_v2 does: the kernel launch environment
 * at dyn_ptr is {u32 ReductionCnt, u32 ReductionIterCnt, void
 * *ReductionBuffer}; the team stores its partial in buffer slot team % 1024
 * (adding to it from team 1024 on), counts itself (atomic increment
 * wrapping after 1023; the team that wraps it adds 1024 to
 * ReductionIterCnt), and the team that counts itself last adds the slots
 * of the first min(teams, 1024) teams to *sum and zeroes both counters.
 * The environment must be in device memory: a dyn_ptr of ~0 or anywhere
 * else unmapped faults, as on a device. */
static void k_omp_sum(struct launch *l, const struct thread_index *t) {
  uint64_t env = PARAM(l, 0, uint64_t);
  int64_t n = PARAM(l, 1, int64_t);
  uint64_t sum = PARAM(l, 2, uint64_t), x = PARAM(l, 3, uint64_t);
  int first = !t->tid[0] && !t->tid[1] && !t->tid[2];
  if (t->phase == 0) {
    if (first)
      l->acc = 0;
    for (int64_t c = (int64_t)t->bid[0] * 128; c < n;
         c += (int64_t)t->gdim[0] * 128)
      for (int64_t i = c + t->tid[0]; i < n && i < c + 128;
           i += t->bdim[0]) {
        double *px = dev(l, x + 8 * (uint64_t)i, 8);
        if (!px)
          return;
        l->acc += *px;
      }
    return;
  }
  if (!first)
    return;
  struct {
    uint32_t cnt, iter;
    uint64_t buffer;
  } *kle = dev(l, env, 16);
  if (!kle)
    return;
  unsigned team = t->bid[0], teams = t->gdim[0];
  uint32_t bound = kle->iter;
  double *slot = dev(l, kle->buffer + 8 * (uint64_t)(team % 1024), 8);
  if (!slot)
    return;
  *slot = team < 1024 ? l->acc : *slot + l->acc;
  uint32_t counted = kle->cnt;
  kle->cnt = counted >= 1023 ? 0 : counted + 1;
  if (counted != teams - bound - 1) {
    if (counted == 1023)
      kle->iter += 1024;
    return;
  }
  unsigned slots = teams < 1024 ? teams : 1024;
  double total = 0;
  for (unsigned i = 0; i < slots; i++) {
    double *p = dev(l, kle->buffer + 8 * (uint64_t)i, 8);
    if (!p)
      return;
    total += *p;
  }
  double *psum = dev(l, sum, 8);
  if (!psum)
    return;
  kle->cnt = kle->iter = 0;
  *psum += total;
}

/* chunk_hash.cu: the BLAKE3 hash of each `chunk_size`-byte store chunk of
 * src[0..len) into out (then the chaining values' scratch), one block per
 * store chunk. Thread 0 of each block runs the kernel's body
 * (blake3_chunks.h's b3_store_chunk) as the block's only thread, once the
 * memory it touches is checked. */
static void k_chunk_hashes(struct launch *l, const struct thread_index *t) {
  uint64_t src = PARAM(l, 0, uint64_t), len = PARAM(l, 1, uint64_t);
  uint64_t out = PARAM(l, 2, uint64_t);
  unsigned chunk_size = PARAM(l, 3, unsigned);
  if (t->tid[0] || t->tid[1] || t->tid[2] || chunk_size == 0)
    return;
  unsigned long long c = t->bid[0];
  unsigned long long start = c * chunk_size;
  if (start >= len)
    return;
  unsigned long long clen =
      len - start < chunk_size ? len - start : chunk_size;
  unsigned long long chunks = b3_store_chunks(len, chunk_size);
  unsigned long long per = b3_chunks_of(chunk_size);
  if (!dev(l, src + start, clen) || !dev(l, out + 32 * c, 32) ||
      !dev(l, out + 4 * (8 * chunks + 8 * c * per), 32 * b3_chunks_of(clen)))
    return;
  b3_store_chunk((const unsigned char *)(uintptr_t)src, len,
                 (unsigned *)(uintptr_t)out, chunk_size, c, 0, 1);
}

/* reg_heavy.ptx: y[i] = sum over k of x[k*n+i] * x[((k+1)%64)*n+i], the
 * multiply-adds in the PTX's order (k = 0 first). */
static void k_reg_heavy(struct launch *l, const struct thread_index *t) {
  uint64_t x = PARAM(l, 0, uint64_t), y = PARAM(l, 1, uint64_t);
  int n = PARAM(l, 2, int);
  int i = (int)(t->bid[0] * t->bdim[0] + t->tid[0]);
  if (i >= n)
    return;
  float v[64];
  for (int k = 0; k < 64; k++) {
    float *px = dev(l, x + 4 * ((uint64_t)k * (uint64_t)n + (uint64_t)i), 4);
    if (!px)
      return;
    v[k] = *px;
  }
  float acc = 0.0f;
  /* A float product is exact in a double: one rounding of the sum, as the
   * PTX's fma.rn (but for double rounding, which record and replay on the
   * simulator share). */
  for (int k = 0; k < 64; k++)
    acc = (float)((double)v[k] * (double)v[(k + 1) % 64] + (double)acc);
  float *py = dev(l, y + 4 * (uint64_t)i, 4);
  if (py)
    *py = acc;
}

static const float BIAS_INIT = 0.5f;
static const unsigned SCALE_INIT[2] = {1000, 1};

const struct kernel_def KERNELS[] = {
    {"reg_heavy", 3, {{0, 8}, {8, 8}, {16, 4}}, k_reg_heavy, 0, {{0}}, 1},
    {"saxpy",
     4,
     {{0, 4}, {8, 8}, {16, 8}, {24, 4}},
     k_saxpy,
     2,
     {{"bias", 4, &BIAS_INIT}, {"launches", 4, NULL}},
     1},
    {"mixed",
     4,
     {{0, 4}, {4, 4}, {8, 16}, {24, 8}},
     k_mixed,
     1,
     {{"table", 64, NULL}},
     1},
    {"grid2d",
     3,
     {{0, 8}, {8, 4}, {12, 4}},
     k_grid2d,
     1,
     {{"scale", 8, SCALE_INIT}},
     1},
    {"shared_reverse",
     3,
     {{0, 8}, {8, 4}, {12, 4}},
     k_shared_reverse,
     0,
     {{0}},
     2},
    {"__omp_offloading_fe00_1_omp_saxpy_l6",
     4,
     {{0, 8}, {8, 8}, {16, 8}, {24, 8}},
     k_omp_saxpy,
     0,
     {{0}},
     1},
    {"reprise_chunk_hashes",
     4,
     {{0, 8}, {8, 8}, {16, 8}, {24, 4}},
     k_chunk_hashes,
     0,
     {{0}},
     1},
    {"__omp_offloading_fe00_1_omp_sum_l8",
     4,
     {{0, 8}, {8, 8}, {16, 8}, {24, 8}},
     k_omp_sum,
     0,
     {{0}},
     2},
};
const size_t NKERNELS = sizeof KERNELS / sizeof KERNELS[0];

/* Runs one block: every thread through phase 0, then every thread
 * through phase 1, and so on, so a barrier between phases holds. */
static void run_block(struct launch *l, struct thread_index *t) {
  unsigned phases = l->def->phases ? l->def->phases : 1;
  for (t->phase = 0; t->phase < phases; t->phase++)
    for (t->tid[2] = 0; t->tid[2] < l->block[2]; t->tid[2]++)
      for (t->tid[1] = 0; t->tid[1] < l->block[1]; t->tid[1]++)
        for (t->tid[0] = 0; t->tid[0] < l->block[0]; t->tid[0]++) {
          l->def->run(l, t);
          if (l->fault)
            return;
        }
}

void run_kernel(struct launch *l) {
  struct thread_index t;
  memcpy(t.gdim, l->grid, sizeof t.gdim);
  memcpy(t.bdim, l->block, sizeof t.bdim);
  l->smem = NULL;
  if (l->shared && !(l->smem = malloc(l->shared))) {
    fprintf(stderr, "simulated CUDA driver: no memory for %u bytes of shared "
                    "memory\n", l->shared);
    abort();
  }
  for (t.bid[2] = 0; t.bid[2] < l->grid[2] && !l->fault; t.bid[2]++)
    for (t.bid[1] = 0; t.bid[1] < l->grid[1] && !l->fault; t.bid[1]++)
      for (t.bid[0] = 0; t.bid[0] < l->grid[0] && !l->fault; t.bid[0]++) {
        /* Shared memory starts undefined in every block. */
        if (l->smem)
          memset(l->smem, 0xa5, l->shared);
        run_block(l, &t);
      }
  free(l->smem);
  l->smem = NULL;
  if (l->fault)
    fault();
}
