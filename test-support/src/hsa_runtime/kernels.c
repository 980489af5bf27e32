/*
 * The fixtures' kernels (backends/amdgpu/fixtures/saxpy_mixed.hip and
 * chunk_hash.hip) as C,
 * one call per work-item, found by the code object's kernel symbol name.
 * Every load and store goes through a check against the memory the GPU
 * may reach (memory.c); a bad one is a GPU memory fault
 * (HSA_STATUS_ERROR_MEMORY_FAULT, its address in sim_fault_address), which
 * queue.c reports as ROCr does: to the system event handlers.
 */
#include "exe.h"
#include "kernels.h"
#include "memory.h"
/* One work-item per work-group runs the chunk-hashing kernel: no barrier
 * to wait at. */
#define B3_SYNC() ((void)0)
#include "blake3_chunks.h"

#include <stdio.h>
#include <string.h>

uint64_t sim_fault_address;

static hsa_status_t fault(const char *kernel, uint64_t addr, unsigned len,
                          bool write) {
  __atomic_store_n(&sim_fault_address, addr, __ATOMIC_RELAXED);
  fprintf(stderr,
          "simulated HSA runtime: memory access fault by the GPU in `%s`: %s "
          "of %u bytes at 0x%llx\n",
          kernel, write ? "a write" : "a read", len, (unsigned long long)addr);
  return HSA_STATUS_ERROR_MEMORY_FAULT;
}

#define LOAD(kernel, addr, var)                                            \
  do {                                                                     \
    if (!sim_gpu_can((addr), sizeof(var), false))                          \
      return fault(kernel, (addr), sizeof(var), false);                    \
    memcpy(&(var), (const void *)(uintptr_t)(addr), sizeof(var));          \
  } while (0)

#define STORE(kernel, addr, var)                                           \
  do {                                                                     \
    if (!sim_gpu_can((addr), sizeof(var), true))                           \
      return fault(kernel, (addr), sizeof(var), true);                     \
    memcpy((void *)(uintptr_t)(addr), &(var), sizeof(var));                \
  } while (0)

/* A global of the kernel's executable, or a fault at address 0. */
#define GLOBAL(kernel, item, name, out)                                    \
  do {                                                                     \
    (out) = sim_exe_var((item)->exe, name, NULL);                          \
    if (!(out)) return fault(kernel, 0, 4, false);                         \
  } while (0)

static void arg(const sim_item *it, unsigned off, void *out, size_t n) {
  memcpy(out, it->kernarg + off, n);
}

/* saxpy(float a @0, float *x @8, float *y @16, int n @24):
 * y[i] = a * x[i] + y[i] + bias for i < n; work-item 0 counts launches. */
static hsa_status_t saxpy(const sim_item *it) {
  float a;
  uint64_t x, y;
  int32_t n;
  arg(it, 0, &a, 4);
  arg(it, 8, &x, 8);
  arg(it, 16, &y, 8);
  arg(it, 24, &n, 4);
  int64_t i = (int64_t)it->gid[0];
  if (i == 0) {
    uint64_t launches;
    uint32_t count;
    GLOBAL("saxpy", it, "launches", launches);
    LOAD("saxpy", launches, count);
    count += 1;
    STORE("saxpy", launches, count);
  }
  if (i < n) {
    uint64_t biasp;
    float bias, xi, yi;
    GLOBAL("saxpy", it, "bias", biasp);
    LOAD("saxpy", biasp, bias);
    LOAD("saxpy", x + 4 * (uint64_t)i, xi);
    LOAD("saxpy", y + 4 * (uint64_t)i, yi);
    /* The same operations, in the same order and precision, as the
     * compiled kernel (a*x + y, then + bias; no contraction). */
    volatile float ax = a * xi;
    volatile float axy = ax + yi;
    float r = axy + bias;
    STORE("saxpy", y + 4 * (uint64_t)i, r);
  }
  return HSA_STATUS_SUCCESS;
}

/* mixed(int k @0, float s @4, Params p @8 {float a, b, c; int d},
 * float *out @24): out[i] = (float)(i*k) + s + p.a + p.b + p.c + (float)p.d
 * + (float)table[i % 16], for every work-item launched. */
static hsa_status_t mixed(const sim_item *it) {
  int32_t k, d;
  float s, pa, pb, pc;
  uint64_t out;
  arg(it, 0, &k, 4);
  arg(it, 4, &s, 4);
  arg(it, 8, &pa, 4);
  arg(it, 12, &pb, 4);
  arg(it, 16, &pc, 4);
  arg(it, 20, &d, 4);
  arg(it, 24, &out, 8);
  int32_t i = (int32_t)it->gid[0];
  uint64_t table;
  int32_t t;
  GLOBAL("mixed", it, "table", table);
  LOAD("mixed", table + 4 * (uint64_t)(i % 16), t);
  volatile float r = (float)(int32_t)((uint32_t)i * (uint32_t)k);
  r = r + s;
  r = r + pa;
  r = r + pb;
  r = r + pc;
  r = r + (float)d;
  float v = r + (float)t;
  STORE("mixed", out + 4 * (uint64_t)(uint32_t)i, v);
  return HSA_STATUS_SUCCESS;
}

/* reprise_chunk_hashes(const u8 *src @0, u64 len @8, u32 *out @16,
 * u32 chunk_size @24): the BLAKE3 hash of each `chunk_size`-byte store
 * chunk of src[0..len) into out (then the chaining values' scratch), one
 * work-group per store chunk. Work-item 0 of each work-group runs the
 * kernel's body (blake3_chunks.h's b3_store_chunk) as the group's only
 * work-item, once the memory it touches is checked. */
static hsa_status_t chunk_hashes(const sim_item *it) {
  uint64_t src, len, out;
  uint32_t chunk_size;
  arg(it, 0, &src, 8);
  arg(it, 8, &len, 8);
  arg(it, 16, &out, 8);
  arg(it, 24, &chunk_size, 4);
  if (it->gid[0] % it->wg[0] || it->gid[1] % it->wg[1] ||
      it->gid[2] % it->wg[2] || chunk_size == 0)
    return HSA_STATUS_SUCCESS;
  unsigned long long c = it->gid[0] / it->wg[0];
  unsigned long long start = c * chunk_size;
  if (start >= len) return HSA_STATUS_SUCCESS;
  unsigned long long clen = len - start < chunk_size ? len - start : chunk_size;
  unsigned long long chunks = b3_store_chunks(len, chunk_size);
  uint64_t cvs = out + 4 * (8 * chunks + 8 * c * b3_chunks_of(chunk_size));
  if (!sim_gpu_can(src + start, clen, false))
    return fault("reprise_chunk_hashes", src + start, (unsigned)clen, false);
  if (!sim_gpu_can(cvs, 32 * b3_chunks_of(clen), true))
    return fault("reprise_chunk_hashes", cvs, 32, true);
  if (!sim_gpu_can(out + 32 * c, 32, true))
    return fault("reprise_chunk_hashes", out + 32 * c, 32, true);
  b3_store_chunk((const unsigned char *)(uintptr_t)src, len,
                 (unsigned *)(uintptr_t)out, chunk_size, c, 0, 1);
  return HSA_STATUS_SUCCESS;
}

static const struct { const char *symbol; sim_kernel_fn fn; } kernels[] = {
    {"saxpy.kd", saxpy},
    {"mixed.kd", mixed},
    {"reprise_chunk_hashes.kd", chunk_hashes},
};

sim_kernel_fn sim_kernel_lookup(const char *symbol) {
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
    if (strcmp(kernels[i].symbol, symbol) == 0) return kernels[i].fn;
  return NULL;
}
