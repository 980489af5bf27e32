/*
 * linked.c's computation, with a fork after the first launch: the child
 * exits at once through exit(3) (running the exit handlers it inherited),
 * the parent waits for it and goes on. Usage as linked.c.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

CUresult cuCtxSynchronize(void);

int main(int argc, char **argv) {
  struct saxpy s = saxpy_open(argc, argv);
  saxpy_upload(&s);
  int n = N;
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &s.dx, &s.dy, &n};
    CHECK(cuLaunchKernel(s.fn, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
                         NULL, params, NULL));
    if (k == 0) {
      fflush(stdout);
      pid_t child = fork();
      if (child == 0)
        exit(0);
      int status;
      if (child < 0 || waitpid(child, &status, 0) != child ||
          !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the child did not exit cleanly\n");
        return 1;
      }
    }
  }
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH_v2(s.y, s.dy, N * sizeof *s.y));
  unsigned launches = read_launches(s.module);
  CHECK(cuDevicePrimaryCtxRelease_v2(s.dev));
  free(s.ptx);
  return exit_status(argc, argv, check(s.x, s.y0, s.y, launches));
}
