/*
 * A CUDA driver API program linked with -lcuda whose allocations grow past
 * what a recording region maps at first: it allocates the sizes CHUNKS
 * lists (KiB, comma-separated, each at least 128; default
 * "8192,4096,4096") with cuMemAlloc, fills allocation i with the 32-bit
 * word 0x1000 + i (cuMemsetD32), puts saxpy's x at the start of the first
 * allocation and y at the end of the last, launches saxpy three times on a
 * stream of its own, and checks the result (linked.c's `result` line) and
 * that the middle word of every allocation still holds its pattern
 * (`allocations N, MiB M, patterns ok`). Usage as linked.c.
 */
#include "driver.h"

#define MAX_ALLOCS 64

int main(int argc, char **argv) {
  const char *list = getenv("CHUNKS");
  if (!list || !*list)
    list = "8192,4096,4096";
  size_t sizes[MAX_ALLOCS];
  int count = 0;
  for (const char *p = list; *p && count < MAX_ALLOCS;) {
    char *end;
    unsigned long long kib = strtoull(p, &end, 10);
    if (end == p || kib < 128) {
      fprintf(stderr, "CHUNKS=%s: sizes of at least 128 KiB, please\n", list);
      return 2;
    }
    sizes[count++] = (size_t)kib << 10;
    p = *end == ',' ? end + 1 : end;
  }
  struct saxpy s = saxpy_open(argc, argv);

  CUdeviceptr d[MAX_ALLOCS];
  size_t total = 0;
  for (int i = 0; i < count; i++) {
    CHECK(cuMemAlloc_v2(&d[i], sizes[i]));
    CHECK(cuMemsetD32_v2(d[i], 0x1000u + (unsigned)i, sizes[i] / 4));
    total += sizes[i];
  }
  const size_t bytes = N * sizeof(float);
  s.dx = d[0];
  s.dy = (d[count - 1] + sizes[count - 1] - bytes) & ~255ull;
  CHECK(cuMemcpyHtoD_v2(s.dx, s.x, bytes));
  CHECK(cuMemcpyHtoD_v2(s.dy, s.y0, bytes));

  CUstream stream = new_stream();
  launch_three(s.fn, s.dx, s.dy, stream);
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(s.y, s.dy, bytes));

  int bad = 0;
  for (int i = 0; i < count; i++) {
    unsigned word = 0;
    CHECK(cuMemcpyDtoH_v2(&word, d[i] + sizes[i] / 2, sizeof word));
    if (word != 0x1000u + (unsigned)i) {
      fprintf(stderr, "allocation %d holds %#x, want %#x\n", i, word,
              0x1000u + (unsigned)i);
      bad = 1;
    }
  }

  unsigned launches = read_launches(s.module);

  CHECK(cuStreamDestroy_v2(stream));
  for (int i = 0; i < count; i++)
    CHECK(cuMemFree_v2(d[i]));
  CHECK(cuModuleUnload(s.module));
  CHECK(cuDevicePrimaryCtxRelease_v2(s.dev));
  free(s.ptx);
  int status = check(s.x, s.y0, s.y, launches);
  printf("allocations %d, MiB %zu, patterns %s\n", count, total >> 20,
         bad ? "BAD" : "ok");
  return exit_status(argc, argv, status | bad);
}
