/*
 * linked.c's computation, with a fork after the first launch: the child
 * exits at once through exit(3) (running the exit handlers it inherited),
 * the parent waits for it and goes on. Usage as linked.c.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

CUresult cuInit(unsigned flags);
CUresult cuDeviceGet(CUdevice *dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuModuleLoadData(CUmodule *module, const void *image);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule module,
                             const char *name);
CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
                              CUmodule module, const char *name);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params,
                        void **extra);
CUresult cuCtxSynchronize(void);

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s saxpy.ptx [exit-status]\n", argv[0]);
    return 2;
  }
  char *ptx = read_file(argv[1]);
  static float x[N], y0[N], y[N];
  inputs(x, y0);
  CUdevice dev;
  CUcontext ctx;
  CUmodule module;
  CUfunction saxpy;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&module, ptx));
  CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc_v2(&dx, sizeof x));
  CHECK(cuMemAlloc_v2(&dy, sizeof y0));
  CHECK(cuMemcpyHtoD_v2(dx, x, sizeof x));
  CHECK(cuMemcpyHtoD_v2(dy, y0, sizeof y0));
  int n = N;
  for (int k = 0; k < 3; k++) {
    float a = A[k];
    void *params[] = {&a, &dx, &dy, &n};
    CHECK(cuLaunchKernel(saxpy, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0,
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
  CHECK(cuMemcpyDtoH_v2(y, dy, sizeof y));
  CUdeviceptr dlaunches;
  size_t size;
  unsigned launches = 0;
  CHECK(cuModuleGetGlobal_v2(&dlaunches, &size, module, "launches"));
  CHECK(cuMemcpyDtoH_v2(&launches, dlaunches, sizeof launches));
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(ptx);
  return exit_status(argc, argv, check(x, y0, y, launches));
}
