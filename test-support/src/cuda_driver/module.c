/*
 * Modules: images (PTX, cubins, fat binaries) checked against the
 * device and searched for the fixture kernels (kernels.c), each module
 * with its own `__device__` globals; its functions (their attributes
 * are library.c's, which takes a library's kernels for functions too).
 */
#include "core.h"
#include "errors.h"
#include "graph.h"
#include "kernels.h"
#include "module.h"
#include "ranges.h"
#include "stream.h"

/* The length of a binary image, from its own header; 0 when unknown. */
static size_t image_len(const unsigned char *p) {
  if (memcmp(p, "\x7f" "ELF", 4) == 0 && p[4] == 2) {
    uint64_t shoff;
    uint16_t shentsize, shnum;
    memcpy(&shoff, p + 0x28, 8);
    memcpy(&shentsize, p + 0x3a, 2);
    memcpy(&shnum, p + 0x3c, 2);
    return (size_t)(shoff + (uint64_t)shentsize * shnum);
  }
  uint32_t magic;
  memcpy(&magic, p, 4);
  if (magic == 0xBA55ED50u) {
    uint16_t header;
    uint64_t body;
    memcpy(&header, p + 6, 2);
    memcpy(&body, p + 8, 8);
    return header + (size_t)body;
  }
  return 0;
}

/* Whether the image defines kernel `name`: `.entry name` in PTX, the name as
 * a whole string in a binary's string tables. */
static int defines(const unsigned char *image, size_t len, int ptx,
                   const char *name) {
  char pat[128];
  size_t n;
  if (ptx) {
    n = (size_t)snprintf(pat, sizeof pat, ".entry %s(", name);
  } else {
    pat[0] = 0;
    memcpy(pat + 1, name, strlen(name) + 1);
    n = strlen(name) + 2;
  }
  return memmem(image, len, pat, n) != NULL;
}

/* The most threads per block the PTX allows kernel `name`: the product of
 * its `.maxntid` (between the parameter list and the body), else the
 * device's limit; for binaries, the device's limit. */
static unsigned max_threads_of(const unsigned char *image, size_t len,
                               int ptx, const char *name) {
  if (!ptx)
    return MAX_THREADS_PER_BLOCK;
  char pat[96];
  size_t n = (size_t)snprintf(pat, sizeof pat, ".entry %s(", name);
  const char *at = memmem(image, len, pat, n);
  if (!at)
    return MAX_THREADS_PER_BLOCK;
  const char *end = (const char *)image + len;
  const char *body = memchr(at, '{', (size_t)(end - at));
  const char *m = memmem(at, (size_t)((body ? body : end) - at), ".maxntid", 8);
  if (!m)
    return MAX_THREADS_PER_BLOCK;
  unsigned long long threads = 1;
  const char *p = m + 8;
  for (int d = 0; d < 3; d++) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
      p++;
    if (p >= end || *p < '0' || *p > '9')
      break;
    threads *= strtoull(p, (char **)&p, 10);
  }
  return threads && threads < MAX_THREADS_PER_BLOCK ? (unsigned)threads
                                                    : MAX_THREADS_PER_BLOCK;
}

/* Whether the PTX declares a function it does not define, other than the
 * ones the driver's compiler provides: loading it fails, as it does on a
 * driver (cuModuleLoadData links nothing; OpenMP device code must be linked
 * with the device runtime first). */
static int unresolved_extern(const unsigned char *image, size_t len) {
  static const char *const PROVIDED[] = {"vprintf", "malloc", "free",
                                         "__assertfail"};
  const char *p = (const char *)image, *end = p + len;
  while ((p = memmem(p, (size_t)(end - p), ".extern .func", 13))) {
    p += 13;
    /* The name: the identifier before the parameter list's '(' that
     * follows any return value's. */
    const char *q = p;
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    if (q < end && *q == '(') {
      const char *close = memchr(q, ')', (size_t)(end - q));
      if (!close)
        return 1;
      q = close + 1;
    }
    while (q < end && (*q == ' ' || *q == '\t'))
      q++;
    const char *name = q;
    while (q < end && (isalnum((unsigned char)*q) || *q == '_' || *q == '$'))
      q++;
    size_t n = (size_t)(q - name);
    int provided = 0;
    for (size_t i = 0; i < sizeof PROVIDED / sizeof PROVIDED[0]; i++)
      if (strlen(PROVIDED[i]) == n && memcmp(PROVIDED[i], name, n) == 0)
        provided = 1;
    if (!provided)
      return 1;
  }
  return 0;
}

int g_nmodules;

static void free_module(struct sim_module *m) {
  pthread_mutex_lock(&g_mem);
  for (int i = 0; i < m->nglobals; i++) {
    remove_range(g_access, &g_naccess, (uintptr_t)m->globals[i].data,
                 m->globals[i].size);
    remove_range(g_globals, &g_nglobals, (uintptr_t)m->globals[i].data,
                 m->globals[i].size);
  }
  pthread_mutex_unlock(&g_mem);
  for (int i = 0; i < m->nglobals; i++)
    free(m->globals[i].data);
  free(m);
}

/* Whether the device can run the image: PTX for its SM or an older one, a
 * cubin for its major version and an older or equal minor one, a fat binary
 * with either. */
static CUresult image_fits(const unsigned char *p, size_t len, int ptx) {
  if (ptx) {
    const char *t = memmem(p, len, ".target sm_", 11);
    return t && atoi(t + 11) > g_cc ? CUDA_ERROR_INVALID_PTX : CUDA_SUCCESS;
  }
  if (memcmp(p, "\x7f" "ELF", 4) == 0) {
    uint32_t flags;
    memcpy(&flags, p + 0x30, 4);
    int sm = (p[8] >= 8 || flags >> 24) ? (flags >> 8) & 0xff : flags & 0xff;
    return sm / 10 == g_cc / 10 && sm <= g_cc ? CUDA_SUCCESS
                                              : CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  /* A fat binary: any PTX entry for an older SM, or a cubin that fits. */
  size_t off = 16;
  while (off + 32 <= len) {
    uint16_t kind;
    uint32_t hsize, arch;
    uint64_t size;
    memcpy(&kind, p + off, 2);
    memcpy(&hsize, p + off + 4, 4);
    memcpy(&size, p + off + 8, 8);
    memcpy(&arch, p + off + 28, 4);
    if ((kind == 1 && (int)arch <= g_cc) ||
        (kind == 2 && (int)arch / 10 == g_cc / 10 && (int)arch <= g_cc))
      return CUDA_SUCCESS;
    if (hsize < 32 || size > len)
      break;
    off += hsize + size;
  }
  return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

/* Loads an image: PTX, a cubin, a fat binary, or a fat binary wrapped as
 * CUDA's runtime registers it (__fatBinC_Wrapper_t: magic 0x466243b1,
 * version, then the fat binary's address at offset 8). */
CUresult load_module(CUmodule *out, const void *image) {
  CUresult r;
  if (!out || !image)
    return CUDA_ERROR_INVALID_VALUE;
  uint32_t wrapper;
  memcpy(&wrapper, image, 4);
  if (wrapper == 0x466243b1u) {
    memcpy(&image, (const unsigned char *)image + 8, sizeof image);
    if (!image)
      return CUDA_ERROR_INVALID_IMAGE;
  }
  const unsigned char *p = image;
  size_t len = image_len(p);
  int ptx = len == 0;
  if (ptx)
    len = strlen(image);
  r = image_fits(p, len, ptx);
  if (r)
    return r;
  if (ptx && unresolved_extern(p, len))
    return CUDA_ERROR_INVALID_PTX;
  unsigned static_shared =
      __atomic_load_n(&g_static_shared, __ATOMIC_RELAXED);
  if (static_shared > SHARED_DEFAULT)
    return CUDA_ERROR_INVALID_IMAGE; /* no compiler makes such a kernel */
  struct sim_module *m = calloc(1, sizeof *m);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (size_t k = 0; k < NKERNELS; k++) {
    const struct kernel_def *def = &KERNELS[k];
    if (!defines(p, len, ptx, def->name))
      continue;
    /* By default a function may have 48 KiB of shared memory in all. */
    m->functions[m->nkernels++] = (struct sim_function){
        def, m, SHARED_DEFAULT - static_shared, static_shared,
        max_threads_of(p, len, ptx, def->name)};
    for (int g = 0; g < def->nglobals; g++) {
      const struct global_def *gd = &def->globals[g];
      unsigned char *data = calloc(1, gd->size);
      if (!data) {
        free_module(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      if (gd->init)
        memcpy(data, gd->init, gd->size);
      m->globals[m->nglobals].name = gd->name;
      m->globals[m->nglobals].data = data;
      m->globals[m->nglobals].size = gd->size;
      m->nglobals++;
      pthread_mutex_lock(&g_mem);
      add_range(g_access, &g_naccess, (uintptr_t)data, gd->size);
      add_range(g_globals, &g_nglobals, (uintptr_t)data, gd->size);
      pthread_mutex_unlock(&g_mem);
    }
  }
  if (m->nkernels == 0) {
    free(m);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  __atomic_add_fetch(&g_nmodules, 1, __ATOMIC_RELAXED);
  *out = m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadData(CUmodule *out, const void *image) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  return load_module(out, image);
}

/* Whether a call that takes JIT options may go on: the context usable,
 * and the options and their values given when they are counted. */
static CUresult usable_with_options(unsigned nopts, int *opts,
                                    void **values) {
  CUresult r = usable();
  if (r)
    return r;
  return nopts && (!opts || !values) ? CUDA_ERROR_INVALID_VALUE
                                     : CUDA_SUCCESS;
}

/* CUjit_option values (cuda.h; CUDA driver API, cuModuleLoadDataEx). */
enum {
  JIT_MAX_REGISTERS = 0,
  JIT_INFO_LOG_BUFFER = 3,
  JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  JIT_ERROR_LOG_BUFFER = 5,
  JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  JIT_OPTIMIZATION_LEVEL = 7,
  JIT_LOG_VERBOSE = 12,
};

/* The registers a kernel's PTX needs, by the simulator's rule: the sum of
 * the counts its `.reg` declarations give (`.reg .f32 %f<80>;` is 80), a
 * 64-bit type counting 2 a register and predicates none, capped at 255
 * and at the kernel's `.maxnreg`. */
static unsigned ptx_registers(const unsigned char *image, size_t len,
                              const char *name) {
  char pat[96];
  size_t n = (size_t)snprintf(pat, sizeof pat, ".entry %s(", name);
  const char *at = memmem(image, len, pat, n);
  if (!at)
    return 32;
  const char *end = (const char *)image + len;
  const char *next = memmem(at + n, (size_t)(end - at - n), ".entry ", 7);
  if (next)
    end = next;
  unsigned need = 0, cap = 255;
  const char *m = memmem(at, (size_t)(end - at), ".maxnreg", 8);
  if (m)
    cap = (unsigned)strtoul(m + 8, NULL, 10);
  for (const char *p = at; (p = memmem(p, (size_t)(end - p), ".reg .", 6));) {
    p += 6;
    int wide = p[1] == '6' && p[2] == '4', pred = strncmp(p, "pred", 4) == 0;
    const char *lt = memchr(p, '<', (size_t)(end - p));
    const char *semi = memchr(p, ';', (size_t)(end - p));
    unsigned count = 1;
    if (lt && semi && lt < semi)
      count = (unsigned)strtoul(lt + 1, NULL, 10);
    if (!pred)
      need += wide ? 2 * count : count;
  }
  if (need == 0)
    need = 1;
  return need < cap ? need : cap;
}

/* Appends `text` to a log buffer of `size` bytes (NUL-terminated). */
static void log_to(char *buf, unsigned size, const char *text) {
  if (!buf || size == 0)
    return;
  size_t have = strnlen(buf, size);
  if (have + 1 >= size)
    return;
  snprintf(buf + have, size - have, "%s", text);
}

/* cuModuleLoadDataEx, as the driver API documents it: the options and
 * their values (an unsigned int option's value is the slot itself; the
 * log buffers' size options are in/out). Simulated:
 * - every call appends one line to the file REPRISE_SIM_CUDA_JIT_RECORD
 *   names, when set: `cuModuleLoadDataEx OPT=VALUE ...` with the numeric
 *   CUjit_option codes (buffers as `buf`), so tests see what was given;
 * - CU_JIT_OPTIMIZATION_LEVEL above 4 (the documented range is 0 to 4) is
 *   CUDA_ERROR_INVALID_VALUE, and PTX holding the comment
 *   `// reprise-sim: jit-fail` is CUDA_ERROR_INVALID_PTX; both write a
 *   ptxas-style line to the error log;
 * - each kernel's CU_FUNC_ATTRIBUTE_NUM_REGS is what its PTX needs
 *   (ptx_registers) capped at CU_JIT_MAX_REGISTERS; below the need it
 *   spills 4 bytes a register short, stored and loaded;
 * - with CU_JIT_LOG_VERBOSE the info log says so in ptxas's words
 *   ("Function properties for NAME", "N bytes stack frame, N bytes spill
 *   stores, N bytes spill loads", "Used N registers"). */
EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image,
                                   unsigned nopts, int *opts, void **values) {
  INJECT();
  CUresult r = usable_with_options(nopts, opts, values);
  if (r)
    return r;
  char *info = NULL, *err = NULL;
  unsigned info_size = 0, err_size = 0, max_regs = 255, level = 4;
  int verbose = 0;
  const char *rec = getenv("REPRISE_SIM_CUDA_JIT_RECORD");
  FILE *f = rec && *rec ? fopen(rec, "a") : NULL;
  if (f)
    fputs("cuModuleLoadDataEx", f);
  for (unsigned i = 0; i < nopts; i++) {
    uintptr_t v = (uintptr_t)values[i];
    int buffer = opts[i] == JIT_INFO_LOG_BUFFER || opts[i] == JIT_ERROR_LOG_BUFFER;
    if (f) {
      if (buffer)
        fprintf(f, " %d=buf", opts[i]);
      else
        fprintf(f, " %d=%lu", opts[i], (unsigned long)v);
    }
    switch (opts[i]) {
    case JIT_MAX_REGISTERS:
      max_regs = (unsigned)v;
      break;
    case JIT_INFO_LOG_BUFFER:
      info = (char *)values[i];
      break;
    case JIT_INFO_LOG_BUFFER_SIZE_BYTES:
      info_size = (unsigned)v;
      break;
    case JIT_ERROR_LOG_BUFFER:
      err = (char *)values[i];
      break;
    case JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
      err_size = (unsigned)v;
      break;
    case JIT_OPTIMIZATION_LEVEL:
      level = (unsigned)v;
      break;
    case JIT_LOG_VERBOSE:
      verbose = v != 0;
      break;
    default:
      break;
    }
  }
  if (f) {
    fputc('\n', f);
    fclose(f);
  }
  if (info && info_size)
    info[0] = 0;
  if (err && err_size)
    err[0] = 0;
  char line[256];
  if (level > 4) {
    snprintf(line, sizeof line,
             "ptxas fatal   : Invalid value %u for option "
             "CU_JIT_OPTIMIZATION_LEVEL (0 to 4)\n",
             level);
    log_to(err, err_size, line);
    return CUDA_ERROR_INVALID_VALUE;
  }
  const char *text = image;
  if (text && image_len(image) == 0 && strstr(text, "// reprise-sim: jit-fail")) {
    log_to(err, err_size,
           "ptxas fatal   : the simulated JIT rejects this PTX (it is marked "
           "'reprise-sim: jit-fail')\n");
    return CUDA_ERROR_INVALID_PTX;
  }
  r = load_module(out, image);
  if (r)
    return r;
  struct sim_module *m = *out;
  size_t len = strlen(text);
  if (image_len(image) == 0)
    for (int k = 0; k < m->nkernels; k++) {
      struct sim_function *fn = &m->functions[k];
      unsigned need = ptx_registers(image, len, fn->def->name);
      unsigned regs = need < max_regs ? need : max_regs;
      fn->regs = regs ? regs : 1;
      unsigned spill = need > regs ? 4 * (need - regs) : 0;
      if (verbose) {
        snprintf(line, sizeof line,
                 "ptxas info    : Compiling entry function '%s' for 'sm_90'\n"
                 "ptxas info    : Function properties for %s\n"
                 "    %u bytes stack frame, %u bytes spill stores, %u bytes "
                 "spill loads\n"
                 "ptxas info    : Used %u registers, 380 bytes cmem[0]\n",
                 fn->def->name, fn->def->name, spill, spill, spill, fn->regs);
        log_to(info, info_size, line);
      }
    }
  /* The size options say how much of each log was filled (out). */
  for (unsigned i = 0; i < nopts; i++) {
    if (opts[i] == JIT_INFO_LOG_BUFFER_SIZE_BYTES && info)
      values[i] = (void *)(uintptr_t)(strnlen(info, info_size) + 1);
    if (opts[i] == JIT_ERROR_LOG_BUFFER_SIZE_BYTES && err)
      values[i] = (void *)(uintptr_t)(strnlen(err, err_size) + 1);
  }
  return CUDA_SUCCESS;
}

void *read_image_file(const char *path, CUresult *err) {
  *err = CUDA_ERROR_INVALID_VALUE;
  if (!path)
    return NULL;
  *err = CUDA_ERROR_FILE_NOT_FOUND;
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *data = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (cap - len < 4096) {
      char *more = realloc(data, cap = cap * 2 + 65536);
      if (!more) {
        free(data);
        fclose(f);
        *err = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
      }
      data = more;
    }
    size_t n = fread(data + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0)
      break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad || len == 0) {
    free(data);
    return NULL;
  }
  data[len] = 0;
  *err = CUDA_SUCCESS;
  return data;
}

CUresult load_image_file(const char *path, void *out,
                         CUresult (*load)(void *out, const void *image,
                                          void *arg),
                         void *arg) {
  if (!out)
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r;
  void *image = read_image_file(path, &r);
  if (!image)
    return r;
  r = load(out, image, arg);
  free(image);
  return r;
}

/* load_module as load_image_file calls it. */
static CUresult module_from_image(void *out, const void *image, void *arg) {
  (void)arg;
  return load_module(out, image);
}

/* cuModuleLoad: the image (PTX, cubin or fat binary) from a file. A path
 * that cannot be read is CUDA_ERROR_FILE_NOT_FOUND, as on the driver. */
EXPORT CUresult cuModuleLoad(CUmodule *out, const char *path) {
  INJECT();
  CUresult r = usable();
  return r ? r : load_image_file(path, out, module_from_image, NULL);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *out, const void *image) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  return load_module(out, image);
}

void unload_module(const char *call, CUmodule m) {
  check_unused(call, (uintptr_t)m, 0, 2);
  /* Nor may a queued copy still read or write one of its globals. */
  for (int i = 0; i < m->nglobals; i++)
    check_unused(call, (uintptr_t)m->globals[i].data, m->globals[i].size, 0);
  forget_module(m);
  __atomic_sub_fetch(&g_nmodules, 1, __ATOMIC_RELAXED);
  free_module(m);
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  INJECT();
  if (!m)
    return CUDA_ERROR_INVALID_HANDLE;
  unload_module("cuModuleUnload", m);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *out, CUmodule m,
                                    const char *name) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!out || !m || !name)
    return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < m->nkernels; i++)
    if (strcmp(m->functions[i].def->name, name) == 0) {
      *out = &m->functions[i];
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *addr, size_t *size,
                                     CUmodule m, const char *name) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!m || !name)
    return CUDA_ERROR_INVALID_VALUE;
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

/* The linker (cuLinkCreate_v2, cuLinkAddData_v2, cuLinkAddFile_v2,
 * cuLinkComplete, cuLinkDestroy). Simulated: the "linked image" is the
 * PTX inputs (CU_JIT_INPUT_PTX) one after the other, each without its
 * NUL, with one NUL at the end: PTX the simulator loads as it loads any
 * (it resolves nothing between the inputs, so an input's `.extern` that
 * another defines still fails to load). As on the driver, the image
 * cuLinkComplete hands out belongs to the link state until
 * cuLinkDestroy. Other input types are CUDA_ERROR_NOT_SUPPORTED (not
 * simulated); JIT options change nothing. */
#define JIT_INPUT_PTX 1

struct sim_link {
  char *image;
  size_t len;
  int completed;
};

EXPORT CUresult cuLinkCreate_v2(unsigned nopts, int *opts, void **values,
                                struct sim_link **out) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!out || (nopts && (!opts || !values)))
    return CUDA_ERROR_INVALID_VALUE;
  struct sim_link *l = calloc(1, sizeof *l);
  if (!l)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *out = l;
  return CUDA_SUCCESS;
}

static CUresult link_add(struct sim_link *l, int type, const void *data,
                         size_t size) {
  if (!l || l->completed || !data || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (type != JIT_INPUT_PTX)
    return CUDA_ERROR_NOT_SUPPORTED;
  /* PTX up to its NUL, or `size` bytes when it has none. */
  const char *nul = memchr(data, 0, size);
  size_t n = nul ? (size_t)(nul - (const char *)data) : size;
  char *more = realloc(l->image, l->len + n + 1);
  if (!more)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(more + l->len, data, n);
  l->len += n;
  more[l->len] = 0;
  l->image = more;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLinkAddData_v2(struct sim_link *l, int type, void *data,
                                 size_t size, const char *name,
                                 unsigned nopts, int *opts, void **values) {
  INJECT();
  (void)name;
  CUresult r = usable_with_options(nopts, opts, values);
  return r ? r : link_add(l, type, data, size);
}

EXPORT CUresult cuLinkAddFile_v2(struct sim_link *l, int type,
                                 const char *path, unsigned nopts, int *opts,
                                 void **values) {
  INJECT();
  CUresult r = usable_with_options(nopts, opts, values);
  if (r)
    return r;
  char *data = read_image_file(path, &r);
  if (!data)
    return r;
  r = link_add(l, type, data, strlen(data) + 1);
  free(data);
  return r;
}

EXPORT CUresult cuLinkComplete(struct sim_link *l, void **image,
                               size_t *size) {
  INJECT();
  CUresult r = usable();
  if (r)
    return r;
  if (!l || !image || !size || !l->image)
    return CUDA_ERROR_INVALID_VALUE;
  l->completed = 1;
  *image = l->image;
  *size = l->len + 1;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLinkDestroy(struct sim_link *l) {
  INJECT();
  if (!l)
    return CUDA_ERROR_INVALID_HANDLE;
  free(l->image);
  free(l);
  return CUDA_SUCCESS;
}
