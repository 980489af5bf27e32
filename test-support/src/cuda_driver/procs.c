/* The driver's entry points by name: cuGetProcAddress[_v2] resolves a
 * base name to the versioned export (PROCS), as the driver does. */
#include "errors.h"

/* How cuGetProcAddress resolves a base name, as cuda.h and cudaTypedefs.h
 * version the driver's functions (PFN_<name>_v<version> there): the entry
 * for `name` with the highest `version` at most the one asked for names
 * the export; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM and a
 * version of at least 7000, an entry with `per_thread` set names its
 * per-thread variant (the export with `_ptsz`, or `_ptds` for synchronous
 * copies, appended). A name with no entry is its own export, from any
 * version, and never has a per-thread variant. A name that has entries
 * but none at most the version asked for is too new for it. */
struct proc_entry {
  const char *name;
  int version;
  const char *symbol;
  char per_thread; /* 0, 'z' (_ptsz) or 'd' (_ptds) */
};

static const struct proc_entry PROCS[] = {
    {"cuGetProcAddress", 11030, "cuGetProcAddress", 0},
    {"cuGetProcAddress", 12000, "cuGetProcAddress_v2", 0},
    {"cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2", 0},
    {"cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain", 0},
    {"cuDevicePrimaryCtxRelease", 7000, "cuDevicePrimaryCtxRelease", 0},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2", 0},
    {"cuCtxCreate", 3020, "cuCtxCreate_v2", 0},
    {"cuCtxCreate", 11040, "cuCtxCreate_v3", 0},
    {"cuCtxDestroy", 4000, "cuCtxDestroy_v2", 0},
    {"cuModuleLoad", 2000, "cuModuleLoad", 0},
    {"cuModuleLoadDataEx", 2010, "cuModuleLoadDataEx", 0},
    {"cuLinkCreate", 6050, "cuLinkCreate_v2", 0},
    {"cuLinkAddData", 6050, "cuLinkAddData_v2", 0},
    {"cuLinkAddFile", 6050, "cuLinkAddFile_v2", 0},
    {"cuLinkComplete", 5050, "cuLinkComplete", 0},
    {"cuLinkDestroy", 5050, "cuLinkDestroy", 0},
    {"cuMemsetD32", 3020, "cuMemsetD32_v2", 'd'},
    {"cuModuleGetGlobal", 3020, "cuModuleGetGlobal_v2", 0},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2", 0},
    {"cuMemAlloc", 3020, "cuMemAlloc_v2", 0},
    {"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2", 0},
    {"cuMemAllocManaged", 6000, "cuMemAllocManaged", 0},
    {"cuMemFree", 3020, "cuMemFree_v2", 0},
    {"cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2", 0},
    {"cuPointerGetAttribute", 4000, "cuPointerGetAttribute", 0},
    {"cuPointerGetAttributes", 7000, "cuPointerGetAttributes", 0},
    {"cuMemHostAlloc", 2020, "cuMemHostAlloc", 0},
    {"cuMemAllocHost", 3020, "cuMemAllocHost_v2", 0},
    {"cuMemHostRegister", 6050, "cuMemHostRegister_v2", 0},
    {"cuMemHostGetDevicePointer", 3020, "cuMemHostGetDevicePointer_v2", 0},
    {"cuMemcpy2D", 3020, "cuMemcpy2D_v2", 'd'},
    {"cuMemcpy2DAsync", 3020, "cuMemcpy2DAsync_v2", 'z'},
    {"cuMemsetD8", 3020, "cuMemsetD8_v2", 'd'},
    {"cuMemsetD8Async", 3020, "cuMemsetD8Async", 'z'},
    {"cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync", 'z'},
    {"cuMemPrefetchAsync", 8000, "cuMemPrefetchAsync", 'z'},
    {"cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2", 'z'},
    {"cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2", 0},
    {"cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2", 0},
    {"cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2", 'd'},
    {"cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2", 'd'},
    {"cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2", 'd'},
    {"cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2", 'z'},
    {"cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2", 'z'},
    {"cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2", 'z'},
    {"cuMemAddressReserve", 10020, "cuMemAddressReserve", 0},
    {"cuMemAddressFree", 10020, "cuMemAddressFree", 0},
    {"cuMemCreate", 10020, "cuMemCreate", 0},
    {"cuMemRelease", 10020, "cuMemRelease", 0},
    {"cuMemMap", 10020, "cuMemMap", 0},
    {"cuMemUnmap", 10020, "cuMemUnmap", 0},
    {"cuMemSetAccess", 10020, "cuMemSetAccess", 0},
    {"cuMemGetAllocationGranularity", 10020, "cuMemGetAllocationGranularity",
     0},
    {"cuMemAllocAsync", 11020, "cuMemAllocAsync", 'z'},
    {"cuMemFreeAsync", 11020, "cuMemFreeAsync", 'z'},
    {"cuStreamDestroy", 4000, "cuStreamDestroy_v2", 0},
    {"cuStreamQuery", 2000, "cuStreamQuery", 'z'},
    {"cuStreamSynchronize", 2000, "cuStreamSynchronize", 'z'},
    {"cuStreamWaitEvent", 3020, "cuStreamWaitEvent", 'z'},
    {"cuStreamAddCallback", 5000, "cuStreamAddCallback", 'z'},
    {"cuStreamIsCapturing", 10000, "cuStreamIsCapturing", 'z'},
    {"cuStreamBeginCapture", 10000, "cuStreamBeginCapture", 'z'},
    {"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2", 'z'},
    {"cuStreamEndCapture", 10000, "cuStreamEndCapture", 'z'},
    {"cuThreadExchangeStreamCaptureMode", 10010,
     "cuThreadExchangeStreamCaptureMode", 0},
    {"cuGraphInstantiateWithFlags", 11040, "cuGraphInstantiateWithFlags", 0},
    {"cuGraphLaunch", 10000, "cuGraphLaunch", 'z'},
    {"cuGraphExecDestroy", 10000, "cuGraphExecDestroy", 0},
    {"cuGraphDestroy", 10000, "cuGraphDestroy", 0},
    {"cuEventRecord", 2000, "cuEventRecord", 'z'},
    {"cuEventDestroy", 4000, "cuEventDestroy_v2", 0},
    {"cuFuncSetAttribute", 9000, "cuFuncSetAttribute", 0},
    {"cuLaunchKernel", 4000, "cuLaunchKernel", 'z'},
    {"cuLaunchKernelEx", 11060, "cuLaunchKernelEx", 'z'},
    {"cuLaunchCooperativeKernel", 9000, "cuLaunchCooperativeKernel", 'z'},
    {"cuLaunchHostFunc", 10000, "cuLaunchHostFunc", 'z'},
    {"cuLibraryLoadData", 12000, "cuLibraryLoadData", 0},
    {"cuLibraryLoadFromFile", 12000, "cuLibraryLoadFromFile", 0},
    {"cuLibraryUnload", 12000, "cuLibraryUnload", 0},
    {"cuLibraryGetKernel", 12000, "cuLibraryGetKernel", 0},
    {"cuLibraryGetModule", 12000, "cuLibraryGetModule", 0},
    {"cuLibraryGetGlobal", 12000, "cuLibraryGetGlobal", 0},
    {"cuKernelGetFunction", 12000, "cuKernelGetFunction", 0},
    {"cuLibraryGetKernelCount", 12040, "cuLibraryGetKernelCount", 0},
    {"cuLibraryEnumerateKernels", 12040, "cuLibraryEnumerateKernels", 0},
    {"cuFuncGetName", 12030, "cuFuncGetName", 0},
    {"cuKernelGetName", 12030, "cuKernelGetName", 0},
    {"cuFuncGetParamInfo", 12040, "cuFuncGetParamInfo", 0},
};

/* A local symbol, so dladdr finds this library, not an interposer's. */
static const char g_self_marker;
static pthread_once_t g_self_once = PTHREAD_ONCE_INIT;
static void *g_self;

static void find_self(void) {
  Dl_info info;
  if (dladdr(&g_self_marker, &info) && info.dli_fname)
    g_self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

/* Whether `name` carries an ABI suffix (_v2, _ptsz, _ptds): the driver is
 * asked for base names only. */
static int suffixed(const char *name) {
  size_t n = strlen(name);
  if (n > 5 && (strcmp(name + n - 5, "_ptsz") == 0 ||
                strcmp(name + n - 5, "_ptds") == 0))
    return 1;
  const char *v = strrchr(name, '_');
  return v && v[1] == 'v' && isdigit((unsigned char)v[2]);
}

static CUresult get_proc_address(const char *name, void **pfn, int version,
                                 cuuint64_t flags, int *status) {
  int st = PROC_SYMBOL_NOT_FOUND;
  if (status)
    *status = st;
  if (!name || !pfn || flags > PROC_PER_THREAD_DEFAULT_STREAM ||
      version > DRIVER_VERSION)
    return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  const struct proc_entry *best = NULL;
  int known = 0;
  for (size_t i = 0; i < sizeof PROCS / sizeof PROCS[0]; i++)
    if (strcmp(PROCS[i].name, name) == 0) {
      known = 1;
      if (PROCS[i].version <= version &&
          (!best || PROCS[i].version > best->version))
        best = &PROCS[i];
    }
  if (known && !best) {
    if (status)
      *status = PROC_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_NOT_FOUND;
  }
  if (strncmp(name, "cu", 2) != 0 || suffixed(name))
    return CUDA_ERROR_NOT_FOUND;
  char symbol[128];
  const char *suffix = "";
  if (best && best->per_thread && version >= 7000 &&
      flags == PROC_PER_THREAD_DEFAULT_STREAM)
    suffix = best->per_thread == 'z' ? "_ptsz" : "_ptds";
  if ((size_t)snprintf(symbol, sizeof symbol, "%s%s",
                       best ? best->symbol : name, suffix) >= sizeof symbol)
    return CUDA_ERROR_NOT_FOUND;
  pthread_once(&g_self_once, find_self);
  void *p = g_self ? dlsym(g_self, symbol) : NULL;
  if (!p)
    return CUDA_ERROR_NOT_FOUND;
  *pfn = p;
  if (status)
    *status = PROC_SUCCESS;
  return CUDA_SUCCESS;
}

/* CUDA 12's resolver (cuda.h: cuGetProcAddress_v2(const char *symbol,
 * void **pfn, int cudaVersion, cuuint64_t flags,
 * CUdriverProcAddressQueryResult *symbolStatus)). An unknown name, or one
 * too new for the version asked for, is CUDA_ERROR_NOT_FOUND with *pfn
 * NULL and the status saying which. */
EXPORT CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version,
                                    cuuint64_t flags, int *status) {
  INJECT();
  return get_proc_address(name, pfn, version, flags, status);
}

/* CUDA 11.3's, without the status. */
EXPORT CUresult cuGetProcAddress(const char *name, void **pfn, int version,
                                 cuuint64_t flags) {
  INJECT();
  return get_proc_address(name, pfn, version, flags, NULL);
}
