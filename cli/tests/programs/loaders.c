/*
 * A CUDA driver API program linked with -lcuda that loads saxpy by the
 * loader LOADER names (environment), in a context of its own
 * (cuCtxCreate, destroyed with cuCtxDestroy before it exits):
 *
 *  - file: cuModuleLoad(&m, "kernel.ptx") of a file it writes (the PTX
 *    given as argv[1]) into a directory of its own, made the working
 *    directory; the file and the directory are gone before the first
 *    launch. It also checks that a file that is not there is
 *    CUDA_ERROR_FILE_NOT_FOUND.
 *  - library-file: cuLibraryLoadFromFile(argv[1]), its kernel by
 *    cuLibraryGetKernel, launched as the CUkernel.
 *  - jit: cuModuleLoadDataEx with JIT options (a register limit, info and
 *    error log buffers, verbose logs).
 *  - link: the PTX linked (cuLinkCreate, cuLinkAddData, cuLinkComplete),
 *    the linked image loaded with cuModuleLoadData, the link state
 *    destroyed before the first launch.
 *
 * Then linked.c's launches, check and `result` line (the device memory
 * zeroed first with cuMemsetD32), and a check that the destroyed context
 * can be neither used nor made current again (exit 1 otherwise). Usage as
 * linked.c.
 */
#include "driver.h"

#include <sys/stat.h>
#include <unistd.h>

#define CUDA_ERROR_FILE_NOT_FOUND 301
#define CUDA_ERROR_INVALID_CONTEXT 201
/* CUjit_option and CUjitInputType values, as cuda.h has them. */
#define CU_JIT_MAX_REGISTERS 0
#define CU_JIT_INFO_LOG_BUFFER 3
#define CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define CU_JIT_LOG_VERBOSE 12
#define CU_JIT_INPUT_PTX 1
typedef struct CUlinkState_st *CUlinkState;

/* As cuda.h declares them (driver.h has the rest). */
CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned flags, CUdevice dev);
CUresult cuCtxDestroy_v2(CUcontext ctx);
CUresult cuModuleLoad(CUmodule *module, const char *fname);
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image,
                            unsigned numOptions, int *options,
                            void **optionValues);
CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                               int *jitOptions, void **jitOptionsValues,
                               unsigned numJitOptions, int *libraryOptions,
                               void **libraryOptionValues,
                               unsigned numLibraryOptions);
CUresult cuLinkCreate_v2(unsigned numOptions, int *options,
                         void **optionValues, CUlinkState *stateOut);
CUresult cuLinkAddData_v2(CUlinkState state, int type, void *data,
                          size_t size, const char *name, unsigned numOptions,
                          int *options, void **optionValues);
CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut);
CUresult cuLinkDestroy(CUlinkState state);

/* Writes the PTX to kernel.ptx in a fresh directory made the working
 * one, loads it by that relative name, then removes both. */
static void load_from_file(CUmodule *module, const char *ptx) {
  char dir[] = "/tmp/reprise-loaders-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(2);
  }
  char old[4096];
  if (!getcwd(old, sizeof old) || chdir(dir) != 0) {
    perror(dir);
    exit(2);
  }
  FILE *f = fopen("kernel.ptx", "wb");
  if (!f || fwrite(ptx, 1, strlen(ptx), f) != strlen(ptx) || fclose(f)) {
    perror("kernel.ptx");
    exit(2);
  }
  CUmodule none;
  CUresult r = cuModuleLoad(&none, "missing.ptx");
  if (r != CUDA_ERROR_FILE_NOT_FOUND) {
    fprintf(stderr, "cuModuleLoad of a missing file: %d, want %d\n", r,
            CUDA_ERROR_FILE_NOT_FOUND);
    exit(2);
  }
  CHECK(cuModuleLoad(module, "kernel.ptx"));
  if (unlink("kernel.ptx") != 0 || chdir(old) != 0 || rmdir(dir) != 0) {
    perror(dir);
    exit(2);
  }
}

int main(int argc, char **argv) {
  char *ptx = saxpy_ptx(argc, argv);
  const char *loader = getenv("LOADER");
  if (!loader)
    loader = "file";
  static float x[N], y0[N], y[N];
  inputs(x, y0);

  CUdevice dev;
  CUcontext ctx;
  CUmodule module = NULL;
  CUlibrary library = NULL;
  CUfunction saxpy;
  CUresult r;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuCtxCreate_v2(&ctx, 0, dev));
  if (strcmp(loader, "file") == 0) {
    load_from_file(&module, ptx);
  } else if (strcmp(loader, "library-file") == 0) {
    CHECK(cuLibraryLoadFromFile(&library, argv[1], NULL, NULL, 0, NULL, NULL,
                                0));
  } else if (strcmp(loader, "jit") == 0) {
    static char info[4096], error[4096];
    int options[] = {CU_JIT_MAX_REGISTERS, CU_JIT_INFO_LOG_BUFFER,
                     CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                     CU_JIT_ERROR_LOG_BUFFER,
                     CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void *values[] = {(void *)(size_t)32, info, (void *)(size_t)sizeof info,
                      error, (void *)(size_t)sizeof error, (void *)(size_t)1};
    CHECK(cuModuleLoadDataEx(&module, ptx, 6, options, values));
  } else if (strcmp(loader, "link") == 0) {
    CUlinkState link;
    void *image;
    size_t size;
    CHECK(cuLinkCreate_v2(0, NULL, NULL, &link));
    CHECK(cuLinkAddData_v2(link, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1,
                           "saxpy.ptx", 0, NULL, NULL));
    CHECK(cuLinkComplete(link, &image, &size));
    CHECK(cuModuleLoadData(&module, image));
    CHECK(cuLinkDestroy(link));
  } else {
    fprintf(stderr, "LOADER=%s: file, library-file, jit or link\n", loader);
    return 2;
  }
  if (library) {
    CUkernel kernel;
    CHECK(cuLibraryGetKernel(&kernel, library, "saxpy"));
    saxpy = (CUfunction)kernel;
  } else {
    CHECK(cuModuleGetFunction(&saxpy, module, "saxpy"));
  }

  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc_v2(&dx, sizeof x));
  CHECK(cuMemAlloc_v2(&dy, sizeof y0));
  CHECK(cuMemsetD32_v2(dx, 0, N));
  CHECK(cuMemcpyHtoD_v2(dx, x, sizeof x));
  CHECK(cuMemcpyHtoD_v2(dy, y0, sizeof y0));

  CUstream stream = new_stream();
  launch_three(saxpy, dx, dy, stream);
  CHECK(cuStreamSynchronize(stream));
  CHECK(cuMemcpyDtoH_v2(y, dy, sizeof y));

  unsigned launches = 0;
  if (library) {
    CUdeviceptr dlaunches;
    size_t size;
    CHECK(cuLibraryGetGlobal(&dlaunches, &size, library, "launches"));
    CHECK(cuMemcpyDtoH_v2(&launches, dlaunches, sizeof launches));
  } else {
    launches = read_launches(module);
  }

  CHECK(cuStreamDestroy_v2(stream));
  CHECK(cuMemFree_v2(dx));
  CHECK(cuMemFree_v2(dy));
  if (library)
    CHECK(cuLibraryUnload(library));
  else
    CHECK(cuModuleUnload(module));
  CHECK(cuCtxDestroy_v2(ctx));
  /* The context is gone: neither usable nor current again. */
  CUdeviceptr after;
  r = cuMemAlloc_v2(&after, 4096);
  CUresult again = cuCtxSetCurrent(ctx);
  if (r != CUDA_ERROR_INVALID_CONTEXT || again != CUDA_ERROR_INVALID_CONTEXT) {
    fprintf(stderr, "after cuCtxDestroy: cuMemAlloc %d, cuCtxSetCurrent %d\n",
            r, again);
    return 1;
  }
  free(ptx);
  return exit_status(argc, argv, check(x, y0, y, launches));
}
