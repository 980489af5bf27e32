/*
 * A CUDA driver API program linked with -lcuda that makes launches the
 * driver refuses, then good ones: saxpy with a block of 2048 threads
 * (past the device's 1024: CUDA_ERROR_INVALID_VALUE), then with 1 MiB of
 * dynamic shared memory (past what the function may have:
 * CUDA_ERROR_INVALID_VALUE), each checked for the driver's error and
 * reported (`refused 2048 threads: 1`, `refused 1 MiB shared: 1`), then
 * linked.c's three launches, check and `result` line. Usage as linked.c.
 */
#include "driver.h"

int main(int argc, char **argv) {
  struct saxpy s = saxpy_open(argc, argv);
  saxpy_upload(&s);
  CUstream stream = new_stream();
  /* The launches the driver refuses. */
  int n = N;
  float a0 = 100.0f;
  void *bad_params[] = {&a0, &s.dx, &s.dy, &n};
  CUresult r = cuLaunchKernel(s.fn, (N + 2047) / 2048, 1, 1, 2048, 1, 1, 0,
                              stream, bad_params, NULL);
  printf("refused 2048 threads: %d\n", r);
  r = cuLaunchKernel(s.fn, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 1u << 20,
                     stream, bad_params, NULL);
  printf("refused 1 MiB shared: %d\n", r);
  /* Then the good ones. */
  launch_three(s.fn, s.dx, s.dy, stream);
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(s.y, s.dy, N * sizeof *s.y));
  return saxpy_close(&s, stream, argc, argv);
}
