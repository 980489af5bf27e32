/*
 * An MPI program: each rank runs saxpy on its own device memory, over its
 * own count of values (N - rank), so that a capture tells which rank
 * recorded it (its last argument). The ranks meet at a barrier before
 * they launch, so that they record at once, then launch saxpy with each
 * of A's three `a`, read the result back and check it. Prints `rank R
 * result <sum>`; exits 1 when a rank's result is wrong.
 */
#include <mpi.h>

#include "driver.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  struct saxpy s = saxpy_open(argc, argv);
  saxpy_upload(&s);
  CUstream stream = new_stream();
  int n = N - rank;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &s.dx, &s.dy, &n};
    CHECK(cuLaunchKernel(s.fn, (n + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         stream, params, NULL));
  }
  CHECK(cuMemcpyDtoHAsync_v2(s.y, s.dy, N * sizeof *s.y, stream));
  CHECK(cuStreamSynchronize(stream));
  int bad = 0;
  double sum = 0;
  for (int i = 0; i < N; i++) {
    float want = s.y0[i];
    if (i < n)
      for (int k = 0; k < 3; k++)
        want = A[k] * s.x[i] + want + 0.5f;
    if (s.y[i] != want && bad++ < 5)
      fprintf(stderr, "rank %d: y[%d] = %g, want %g\n", rank, i, s.y[i], want);
    sum += s.y[i];
  }
  printf("rank %d result %.6f\n", rank, sum);
  fflush(stdout);
  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(s.dx));
  CHECK(cuMemFree_v2(s.dy));
  CHECK(cuModuleUnload(s.module));
  CHECK(cuDevicePrimaryCtxRelease_v2(s.dev));
  free(s.ptx);
  MPI_Finalize();
  return bad ? 1 : 0;
}
