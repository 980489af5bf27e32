/* CUDA 12's libraries, over the module machinery (module.c), and their
 * kernels, which the driver accepts wherever a CUfunction goes; so the
 * entry points that take a function (its name, module and attributes). */
#include "core.h"
#include "errors.h"
#include "library.h"
#include "module.h"

/* A library wraps one module; its kernels are handles of their own, each
 * standing for one of the module's functions. */
struct sim_kernel {
  struct sim_library *library;
  struct sim_function *function;
};

struct sim_library {
  CUmodule module;
  struct sim_kernel kernels[4];
  struct sim_library *next; /* in g_libraries */
};

static pthread_mutex_t g_libraries_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_library *g_libraries;

/* Whether `lib` is a live library (g_libraries_lock held). */
static int library_live(const struct sim_library *lib) {
  for (struct sim_library *l = g_libraries; l; l = l->next)
    if (l == lib)
      return 1;
  return 0;
}

/* The library kernel at `p`, or NULL when `p` is none. */
static struct sim_kernel *kernel_at(const void *p) {
  struct sim_kernel *k = NULL;
  pthread_mutex_lock(&g_libraries_lock);
  for (struct sim_library *l = g_libraries; l && !k; l = l->next)
    for (int i = 0; i < l->module->nkernels; i++)
      if ((const void *)&l->kernels[i] == p)
        k = &l->kernels[i];
  pthread_mutex_unlock(&g_libraries_lock);
  return k;
}

/* The function a handle names: a CUfunction, or a CUkernel passed as one
 * (which the driver accepts wherever a CUfunction goes). */
CUfunction fn_of(CUfunction f) {
  struct sim_kernel *k = f ? kernel_at(f) : NULL;
  return k ? k->function : f;
}

/* The JIT and library options both loaders take: checked, otherwise
 * unused. */
struct library_options {
  int *jit_opts;
  void **jit_values;
  unsigned njit;
  int *lib_opts;
  void **lib_values;
  unsigned nlib;
};

/* The library's module is loaded from `code` (which it does not keep);
 * `out` a CUlibrary *, `options` the loader's struct library_options (the
 * shape load_image_file calls). */
static CUresult library_load(void *out, const void *code, void *options) {
  const struct library_options *o = options;
  CUresult r;
  if (!out || (o->njit && (!o->jit_opts || !o->jit_values)) ||
      (o->nlib && (!o->lib_opts || !o->lib_values)))
    return CUDA_ERROR_INVALID_VALUE;
  struct sim_library *lib = calloc(1, sizeof *lib);
  if (!lib)
    return CUDA_ERROR_OUT_OF_MEMORY;
  r = load_module(&lib->module, code);
  if (r) {
    free(lib);
    return r;
  }
  for (int i = 0; i < lib->module->nkernels; i++)
    lib->kernels[i] = (struct sim_kernel){lib, &lib->module->functions[i]};
  pthread_mutex_lock(&g_libraries_lock);
  lib->next = g_libraries;
  g_libraries = lib;
  pthread_mutex_unlock(&g_libraries_lock);
  *(CUlibrary *)out = lib;
  return CUDA_SUCCESS;
}

/* Whether a library may be loaded: once cuInit ran, with or without a
 * current context (CUDA 12's context-independent loading), and no sticky
 * fault. */
static CUresult library_loadable(void) {
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  return sticky();
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *out, const void *code,
                                  int *jit_opts, void **jit_values,
                                  unsigned njit, int *lib_opts,
                                  void **lib_values, unsigned nlib) {
  INJECT();
  struct library_options o = {jit_opts, jit_values, njit,
                              lib_opts, lib_values, nlib};
  CUresult r = library_loadable();
  return r ? r : library_load(out, code, &o);
}

/* cuLibraryLoadFromFile: cuLibraryLoadData of the file's image; a path
 * that cannot be read is CUDA_ERROR_FILE_NOT_FOUND. */
EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *out, const char *path,
                                      int *jit_opts, void **jit_values,
                                      unsigned njit, int *lib_opts,
                                      void **lib_values, unsigned nlib) {
  INJECT();
  struct library_options o = {jit_opts, jit_values, njit,
                              lib_opts, lib_values, nlib};
  CUresult r = library_loadable();
  return r ? r : load_image_file(path, out, library_load, &o);
}

EXPORT CUresult cuLibraryUnload(CUlibrary lib) {
  INJECT();
  pthread_mutex_lock(&g_libraries_lock);
  int live = lib && library_live(lib);
  pthread_mutex_unlock(&g_libraries_lock);
  if (!live)
    return CUDA_ERROR_INVALID_HANDLE;
  unload_module("cuLibraryUnload", lib->module);
  pthread_mutex_lock(&g_libraries_lock);
  for (struct sim_library **p = &g_libraries; *p; p = &(*p)->next)
    if (*p == lib) {
      *p = lib->next;
      break;
    }
  pthread_mutex_unlock(&g_libraries_lock);
  free(lib);
  return CUDA_SUCCESS;
}

/* The live library `lib` (checked), or NULL. */
static struct sim_library *library_of(CUlibrary lib) {
  pthread_mutex_lock(&g_libraries_lock);
  int live = lib && library_live(lib);
  pthread_mutex_unlock(&g_libraries_lock);
  return live ? lib : NULL;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *out, CUlibrary lib,
                                   const char *name) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out || !name)
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < lib->module->nkernels; i++)
    if (strcmp(lib->module->functions[i].def->name, name) == 0) {
      *out = &lib->kernels[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary lib) {
  INJECT();
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!count)
    return CUDA_ERROR_INVALID_VALUE;
  *count = (unsigned)lib->module->nkernels;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned n,
                                          CUlibrary lib) {
  INJECT();
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!kernels || n != (unsigned)lib->module->nkernels)
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++)
    kernels[i] = &lib->kernels[i];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetModule(CUmodule *out, CUlibrary lib) {
  INJECT();
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = lib->module;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *addr, size_t *size,
                                   CUlibrary lib, const char *name) {
  INJECT();
  if (!g_initialized)
    return CUDA_ERROR_NOT_INITIALIZED;
  if (!library_of(lib))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  CUmodule m = lib->module;
  for (int i = 0; i < m->nglobals; i++)
    if (strcmp(m->globals[i].name, name) == 0) {
      if (addr)
        *addr = (CUdeviceptr)(uintptr_t)m->globals[i].data;
      if (size)
        *size = m->globals[i].size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuKernelGetFunction(CUfunction *out, CUkernel kernel) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  struct sim_kernel *k = kernel ? kernel_at(kernel) : NULL;
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = k->function;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel kernel) {
  INJECT();
  struct sim_kernel *k = kernel ? kernel_at(kernel) : NULL;
  if (!k)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  *name = k->function->def->name;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f) {
  INJECT();
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!name)
    return CUDA_ERROR_INVALID_VALUE;
  *name = f->def->name;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetModule(CUmodule *out, CUfunction f) {
  INJECT();
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  *out = f->module;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attr, int value) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (attr != FUNC_ATTR_MAX_DYNAMIC_SHARED)
    return CUDA_ERROR_NOT_SUPPORTED; /* not simulated */
  /* Static and dynamic shared memory together within the opt-in limit. */
  if (value < 0 || (unsigned)value > SHARED_OPTIN - f->static_shared)
    return CUDA_ERROR_INVALID_VALUE;
  __atomic_store_n(&f->max_dynamic_shared, (unsigned)value, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetAttribute(int *value, int attr, CUfunction f) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!value)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
  case FUNC_ATTR_MAX_THREADS_PER_BLOCK:
    *value = (int)f->max_threads;
    return CUDA_SUCCESS;
  case FUNC_ATTR_SHARED_SIZE:
    *value = (int)f->static_shared;
    return CUDA_SUCCESS;
  case FUNC_ATTR_MAX_DYNAMIC_SHARED:
    *value = (int)__atomic_load_n(&f->max_dynamic_shared, __ATOMIC_RELAXED);
    return CUDA_SUCCESS;
  case FUNC_ATTR_NUM_REGS:
    *value = f->regs ? (int)f->regs : 32;
    return CUDA_SUCCESS;
  default:
    return CUDA_ERROR_NOT_SUPPORTED; /* not simulated */
  }
}

#ifndef SIM_NO_PARAM_INFO
EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t index, size_t *offset,
                                   size_t *size) {
  INJECT();
  if (!g_param_info)
    return CUDA_ERROR_NOT_SUPPORTED;
  f = fn_of(f);
  if (!f)
    return CUDA_ERROR_INVALID_HANDLE;
  if (index >= (size_t)f->def->nparams)
    return CUDA_ERROR_INVALID_VALUE;
  if (offset)
    *offset = f->def->params[index].offset;
  if (size)
    *size = f->def->params[index].size;
  return CUDA_SUCCESS;
}
#endif
