/* Fault injection (reprise_sim_fail), and the driver's error names and
 * strings. */
#include "errors.h"

/* Simulator only: makes the call named `call` fail with `code` once, after
 * `skip` calls of it succeed (one injection at a time; a new one replaces
 * the last). Every driver function but cuGetErrorName/String checks it
 * first, before any effect. */
static pthread_mutex_t g_inject_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_inject_call[64];
static CUresult g_inject_code;
static int g_inject_skip;
static int g_inject_times;

/* Simulator only: as reprise_sim_fail, but the `times` calls after the
 * skipped ones all fail. */
EXPORT void reprise_sim_fail_times(const char *call, int code, int skip,
                                   int times) {
  pthread_mutex_lock(&g_inject_lock);
  snprintf(g_inject_call, sizeof g_inject_call, "%s", call ? call : "");
  g_inject_code = code;
  g_inject_skip = skip;
  g_inject_times = times;
  pthread_mutex_unlock(&g_inject_lock);
}

EXPORT void reprise_sim_fail(const char *call, int code, int skip) {
  reprise_sim_fail_times(call, code, skip, 1);
}

CUresult injected(const char *call) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&g_inject_lock);
  if (g_inject_call[0] && strcmp(call, g_inject_call) == 0) {
    if (g_inject_skip > 0) {
      g_inject_skip--;
    } else {
      r = g_inject_code;
      if (--g_inject_times <= 0)
        g_inject_call[0] = 0;
    }
  }
  pthread_mutex_unlock(&g_inject_lock);
  return r;
}
struct error_text {
  CUresult code;
  const char *name;
  const char *text;
};

static const struct error_text ERRORS[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
     "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
     "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
     "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE",
     "device kernel image is invalid (the simulated driver runs only "
     "reprise's fixture kernels)"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
     "invalid device context"},
    {CUDA_ERROR_FILE_NOT_FOUND, "CUDA_ERROR_FILE_NOT_FOUND",
     "file not found"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
     "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
     "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
     "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
     "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
     "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
     "dependency created on uncaptured work in another stream"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking "
     "stream"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,
     "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another "
     "thread"},
};

static const struct error_text *find_error(CUresult code) {
  for (size_t i = 0; i < sizeof ERRORS / sizeof ERRORS[0]; i++)
    if (ERRORS[i].code == code)
      return &ERRORS[i];
  return NULL;
}

EXPORT CUresult cuGetErrorName(CUresult code, const char **out) {
  const struct error_text *e = find_error(code);
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = e ? e->name : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult code, const char **out) {
  const struct error_text *e = find_error(code);
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = e ? e->text : NULL;
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
