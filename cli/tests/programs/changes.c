/*
 * A CUDA driver API program linked with -lcuda whose launches each change
 * one store chunk of a large region: it allocates MIB MiB (default 16,
 * at least 4) with cuMemAlloc, fills it with the 32-bit word 0x600d
 * (cuMemsetD32), puts saxpy's x at its start and y 3 MiB in (one 1 MiB
 * chunk holds all of y), launches saxpy three times on a stream of its
 * own, and checks the result (linked.c's `result` line) and the pattern
 * past y. Then, where the driver is reprise's simulator, it prints the
 * bytes the driver copied device-to-host in the whole run (`d2h BYTES`,
 * reprise_sim_copied_bytes): what recording its launches cost in copies,
 * less what the program itself read back. Usage as linked.c.
 */
#include "driver.h"

/* The simulator's counters (host-to-device, device-to-host,
 * device-to-device); absent from other drivers. */
extern void reprise_sim_copied_bytes(unsigned long long out[3])
    __attribute__((weak));

int main(int argc, char **argv) {
  const char *mib = getenv("MIB");
  size_t size = (size_t)(mib && *mib ? strtoull(mib, NULL, 10) : 16) << 20;
  if (size < (4u << 20)) {
    fprintf(stderr, "MIB=%s: at least 4, please\n", mib);
    return 2;
  }
  struct saxpy s = saxpy_open(argc, argv);

  CUdeviceptr d;
  CHECK(cuMemAlloc_v2(&d, size));
  CHECK(cuMemsetD32_v2(d, 0x600du, size / 4));
  const size_t bytes = N * sizeof(float);
  s.dx = d;
  s.dy = d + (3u << 20);
  CHECK(cuMemcpyHtoD_v2(s.dx, s.x, bytes));
  CHECK(cuMemcpyHtoD_v2(s.dy, s.y0, bytes));

  CUstream stream = new_stream();
  launch_three(s.fn, s.dx, s.dy, stream);
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(s.y, s.dy, bytes));

  unsigned word = 0;
  CHECK(cuMemcpyDtoH_v2(&word, d + size - 4, sizeof word));
  int bad = word != 0x600du;
  if (bad)
    fprintf(stderr, "the region's last word holds %#x, want 0x600d\n", word);

  unsigned launches = read_launches(s.module);
  if (reprise_sim_copied_bytes) {
    unsigned long long copied[3];
    reprise_sim_copied_bytes(copied);
    printf("d2h %llu\n", copied[1]);
  }

  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(d));
  CHECK(cuModuleUnload(s.module));
  CHECK(cuDevicePrimaryCtxRelease_v2(s.dev));
  free(s.ptx);
  int status = check(s.x, s.y0, s.y, launches);
  return exit_status(argc, argv, status | bad);
}
