/*
 * Code object readers and executables. A code object is an ELF64
 * little-endian AMDGPU object (e_machine 224) for the agent's processor
 * (e_flags & 0xff, EF_AMDGPU_MACH_*); its PT_LOAD segments are copied into
 * one fresh device allocation (zero-filled to the end of the last), and
 * its .dynsym objects become symbols: `<name>.kd` kernel descriptors
 * (kernel objects, with the segment sizes the descriptor gives) and
 * variables. Every offset the file gives is bounds-checked.
 */
#include "core.h"
#include "exe.h"
#include "kernels.h"
#include "loader.h"
#include "memory.h"
#include "queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define READER_BASE 0x4ead000000ull
#define EXE_BASE 0xe3e0000000ull
#define SYM_BASE 0x5e00000000000ull
#define MAX_SYMS 4096u

struct reader { bool live; const uint8_t *bytes; size_t size; };
static struct reader *readers;
static size_t nreaders, capreaders;
static long live_readers;
static size_t capexes;
static long live_exes;

long sim_loader_count(const char *what) {
  pthread_mutex_lock(&sim_exe_mu);
  long n = strcmp(what, "readers") == 0 ? live_readers : live_exes;
  pthread_mutex_unlock(&sim_exe_mu);
  return n;
}

static void *grow(void *p, size_t *cap, size_t n, size_t elem) {
  if (n < *cap) return p;
  *cap = *cap ? *cap * 2 : 32;
  p = realloc(p, *cap * elem);
  if (!p) sim_abort("out of memory");
  return p;
}

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(
    const void *code_object, size_t size, hsa_code_object_reader_t *reader) {
  SIM_ENTER("hsa_code_object_reader_create_from_memory");
  if (!code_object || size == 0 || !reader)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&sim_exe_mu);
  readers = grow(readers, &capreaders, nreaders, sizeof *readers);
  readers[nreaders] = (struct reader){true, code_object, size};
  reader->handle = READER_BASE + nreaders++;
  live_readers++;
  pthread_mutex_unlock(&sim_exe_mu);
  return HSA_STATUS_SUCCESS;
}

/* sim_exe_mu held. */
static struct reader *find_reader(hsa_code_object_reader_t r) {
  uint64_t i = r.handle - READER_BASE;
  if (r.handle < READER_BASE || i >= nreaders || !readers[i].live) return NULL;
  return &readers[i];
}

static struct sim_exe *find_exe(hsa_executable_t e) {
  uint64_t i = e.handle - EXE_BASE;
  if (e.handle < EXE_BASE || i >= sim_nexes || !sim_exes[i]->live) return NULL;
  return sim_exes[i];
}

EXPORT hsa_status_t hsa_code_object_reader_destroy(
    hsa_code_object_reader_t reader) {
  SIM_ENTER("hsa_code_object_reader_destroy");
  pthread_mutex_lock(&sim_exe_mu);
  struct reader *r = find_reader(reader);
  if (r) {
    r->live = false;
    live_readers--;
  }
  pthread_mutex_unlock(&sim_exe_mu);
  return r ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
}

EXPORT hsa_status_t hsa_executable_create_alt(uint32_t profile,
                                              uint32_t rounding,
                                              const char *options,
                                              hsa_executable_t *executable) {
  SIM_ENTER("hsa_executable_create_alt");
  (void)options;
  if (profile > 1 || rounding > 2 || !executable)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  struct sim_exe *x = calloc(1, sizeof *x);
  if (!x) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  x->live = true;
  pthread_mutex_lock(&sim_exe_mu);
  sim_exes = grow(sim_exes, &capexes, sim_nexes, sizeof *sim_exes);
  sim_exes[sim_nexes] = x;
  executable->handle = EXE_BASE + sim_nexes++;
  live_exes++;
  pthread_mutex_unlock(&sim_exe_mu);
  return HSA_STATUS_SUCCESS;
}

/* Little-endian reads within [0, size); false when out of bounds. */
struct elf { const uint8_t *b; size_t size; };
static bool rd(const struct elf *e, uint64_t off, unsigned n, uint64_t *out) {
  if (off > e->size || n > e->size - off) return false;
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)e->b[off + i] << (8 * i);
  *out = v;
  return true;
}
#define RD(off, n, out) \
  do { if (!rd(e, (off), (n), &(out))) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT; } while (0)

static uint32_t u32_at(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Reads the object into `x` (sim_exe_mu held). */
static hsa_status_t load_elf(struct sim_exe *x, const struct elf *e) {
  uint64_t v, phoff, phentsize, phnum, shoff, shentsize, shnum;
  if (e->size < 64 || memcmp(e->b, "\177ELF", 4) != 0 || e->b[4] != 2 ||
      e->b[5] != 1)
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  RD(18, 2, v);
  if (v != 224) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  RD(48, 4, v);
  if ((v & 0xff) != sim_gpu_mach()) return HSA_STATUS_ERROR_INVALID_ISA;
  RD(32, 8, phoff); RD(54, 2, phentsize); RD(56, 2, phnum);
  RD(40, 8, shoff); RD(58, 2, shentsize); RD(60, 2, shnum);
  if (phentsize < 56 || (shnum && shentsize < 64))
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  /* The image: every PT_LOAD at its vaddr. */
  uint64_t end = 0;
  for (uint64_t i = 0; i < phnum; i++) {
    uint64_t at = phoff + i * phentsize, type, off, vaddr, filesz, memsz;
    RD(at, 4, type);
    if (type != 1) continue;
    RD(at + 8, 8, off); RD(at + 16, 8, vaddr); RD(at + 32, 8, filesz);
    RD(at + 40, 8, memsz);
    if (filesz > memsz || off > e->size || filesz > e->size - off ||
        vaddr > (1ull << 30) || memsz > (1ull << 30))
      return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
    if (vaddr + memsz > end) end = vaddr + memsz;
  }
  if (end == 0) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  uint8_t *seg = sim_device_alloc(end);
  if (!seg) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  for (uint64_t i = 0; i < phnum; i++) {
    uint64_t at = phoff + i * phentsize, type = 0, off = 0, vaddr = 0, filesz = 0;
    rd(e, at, 4, &type);
    if (type != 1) continue;
    rd(e, at + 8, 8, &off); rd(e, at + 16, 8, &vaddr); rd(e, at + 32, 8, &filesz);
    memcpy(seg + vaddr, e->b + off, filesz);
  }
  x->seg = seg;
  x->seg_size = end;
  /* Symbols from .dynsym and its string table. */
  hsa_status_t bad = HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  for (uint64_t s = 0; s < shnum; s++) {
    uint64_t at = shoff + s * shentsize, type, off, size, link, entsize;
    if (!rd(e, at + 4, 4, &type)) goto fail;
    if (type != 11) continue; /* SHT_DYNSYM */
    if (!rd(e, at + 24, 8, &off) || !rd(e, at + 32, 8, &size) ||
        !rd(e, at + 40, 4, &link) || !rd(e, at + 56, 8, &entsize))
      goto fail;
    uint64_t stroff, strsize, lat = shoff + link * shentsize;
    if (link >= shnum || !rd(e, lat + 24, 8, &stroff) ||
        !rd(e, lat + 32, 8, &strsize) || stroff > e->size ||
        strsize > e->size - stroff || entsize < 24 || off > e->size ||
        size > e->size - off)
      goto fail;
    for (uint64_t k = 1; k < size / entsize; k++) {
      uint64_t sat = off + k * entsize, name, info, shndx, value, ssize;
      if (!rd(e, sat, 4, &name) || !rd(e, sat + 4, 1, &info) ||
          !rd(e, sat + 6, 2, &shndx) || !rd(e, sat + 8, 8, &value) ||
          !rd(e, sat + 16, 8, &ssize))
        goto fail;
      if ((info & 0xf) != 1 || shndx == 0) continue; /* STT_OBJECT, defined */
      if (name >= strsize) goto fail;
      const char *nm = (const char *)e->b + stroff + name;
      size_t len = strnlen(nm, strsize - name);
      if (len == strsize - name || len >= sizeof x->syms[0].name) goto fail;
      if (value > end || ssize > end - value || x->nsyms == MAX_SYMS) goto fail;
      struct sym y = {{0}, HSA_SYMBOL_KIND_VARIABLE, (uint64_t)seg + value,
                      ssize, 0, 0, 0, NULL};
      memcpy(y.name, nm, len);
      if (len > 3 && strcmp(nm + len - 3, ".kd") == 0) {
        if (ssize != 64) goto fail;
        y.kind = HSA_SYMBOL_KIND_KERNEL;
        y.group_size = u32_at(seg + value);
        y.private_size = u32_at(seg + value + 4);
        y.kernarg_size = u32_at(seg + value + 8);
        y.fn = sim_kernel_lookup(y.name);
      }
      x->syms = realloc(x->syms, (x->nsyms + 1) * sizeof *x->syms);
      if (!x->syms) sim_abort("out of memory");
      x->syms[x->nsyms++] = y;
    }
  }
  return HSA_STATUS_SUCCESS;
fail:
  sim_device_free(seg);
  x->seg = NULL;
  free(x->syms);
  x->syms = NULL;
  x->nsyms = 0;
  return bad;
}

EXPORT hsa_status_t hsa_executable_load_agent_code_object(
    hsa_executable_t executable, hsa_agent_t agent,
    hsa_code_object_reader_t reader, const char *options,
    hsa_loaded_code_object_t *loaded) {
  SIM_ENTER("hsa_executable_load_agent_code_object");
  (void)options;
  if (!sim_agent_valid(agent) || agent.handle != SIM_GPU_AGENT)
    return HSA_STATUS_ERROR_INVALID_AGENT;
  pthread_mutex_lock(&sim_exe_mu);
  struct sim_exe *x = find_exe(executable);
  struct reader *r = find_reader(reader);
  hsa_status_t rc;
  if (!x)
    rc = HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  else if (!r)
    rc = HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  else if (x->frozen)
    rc = HSA_STATUS_ERROR_FROZEN_EXECUTABLE;
  else if (x->loaded) /* the simulator holds one code object per executable */
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  else {
    struct elf e = {r->bytes, r->size};
    rc = load_elf(x, &e);
    x->loaded = rc == HSA_STATUS_SUCCESS;
  }
  pthread_mutex_unlock(&sim_exe_mu);
  if (rc == HSA_STATUS_SUCCESS && loaded) loaded->handle = executable.handle;
  return rc;
}

EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t executable,
                                          const char *options) {
  SIM_ENTER("hsa_executable_freeze");
  (void)options;
  pthread_mutex_lock(&sim_exe_mu);
  struct sim_exe *x = find_exe(executable);
  hsa_status_t rc = !x          ? HSA_STATUS_ERROR_INVALID_EXECUTABLE
                    : x->frozen ? HSA_STATUS_ERROR_FROZEN_EXECUTABLE
                                : HSA_STATUS_SUCCESS;
  if (rc == HSA_STATUS_SUCCESS) x->frozen = true;
  pthread_mutex_unlock(&sim_exe_mu);
  return rc;
}

EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t executable) {
  SIM_ENTER("hsa_executable_destroy");
  pthread_mutex_lock(&sim_exe_mu);
  struct sim_exe *x = find_exe(executable);
  if (!x) {
    pthread_mutex_unlock(&sim_exe_mu);
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  }
  if (x->running)
    sim_abort("hsa_executable_destroy: a kernel of executable 0x%llx is running",
              (unsigned long long)executable.handle);
  if (x->seg) {
    sim_queue_check_unused((uint64_t)x->seg, (uint64_t)x->seg + x->seg_size,
                           "hsa_executable_destroy");
    sim_device_free(x->seg);
  }
  free(x->syms);
  x->syms = NULL;
  x->nsyms = 0;
  x->live = false;
  live_exes--;
  pthread_mutex_unlock(&sim_exe_mu);
  return HSA_STATUS_SUCCESS;
}

static hsa_executable_symbol_t sym_handle(hsa_executable_t e, size_t i) {
  return (hsa_executable_symbol_t){SYM_BASE + (e.handle - EXE_BASE) * MAX_SYMS + i};
}

/* sim_exe_mu held; NULL when unknown. */
static struct sym *find_sym(hsa_executable_symbol_t s) {
  if (s.handle < SYM_BASE) return NULL;
  uint64_t i = (s.handle - SYM_BASE) / MAX_SYMS, k = (s.handle - SYM_BASE) % MAX_SYMS;
  if (i >= sim_nexes || !sim_exes[i]->live || k >= sim_exes[i]->nsyms) return NULL;
  return &sim_exes[i]->syms[k];
}

EXPORT hsa_status_t hsa_executable_get_symbol_by_name(
    hsa_executable_t executable, const char *name, const hsa_agent_t *agent,
    hsa_executable_symbol_t *symbol) {
  SIM_ENTER("hsa_executable_get_symbol_by_name");
  if (!name || !symbol) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (agent && !sim_agent_valid(*agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  pthread_mutex_lock(&sim_exe_mu);
  struct sim_exe *x = find_exe(executable);
  hsa_status_t rc = x ? HSA_STATUS_ERROR_INVALID_SYMBOL_NAME
                      : HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  /* Every symbol is the GPU agent's (none is a program symbol). */
  if (x && agent && agent->handle == SIM_GPU_AGENT)
    for (size_t i = 0; i < x->nsyms; i++)
      if (strcmp(x->syms[i].name, name) == 0) {
        *symbol = sym_handle(executable, i);
        rc = HSA_STATUS_SUCCESS;
        break;
      }
  pthread_mutex_unlock(&sim_exe_mu);
  return rc;
}

EXPORT hsa_status_t hsa_executable_symbol_get_info(
    hsa_executable_symbol_t symbol, uint32_t attribute, void *value) {
  SIM_ENTER("hsa_executable_symbol_get_info");
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&sim_exe_mu);
  struct sym *y = find_sym(symbol);
  if (!y) {
    pthread_mutex_unlock(&sim_exe_mu);
    return HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL;
  }
  struct sym s = *y;
  pthread_mutex_unlock(&sim_exe_mu);
  bool kernel = s.kind == HSA_SYMBOL_KIND_KERNEL;
  switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_TYPE:
      *(uint32_t *)value = s.kind;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH:
      *(uint32_t *)value = (uint32_t)strlen(s.name);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_NAME:
      memcpy(value, s.name, strlen(s.name));
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_AGENT:
      ((hsa_agent_t *)value)->handle = SIM_GPU_AGENT;
      return HSA_STATUS_SUCCESS;
  }
  if (kernel) switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
      *(uint64_t *)value = s.addr;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
      *(uint32_t *)value = s.kernarg_size;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT:
      *(uint32_t *)value = 16;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
      *(uint32_t *)value = s.group_size;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
      *(uint32_t *)value = s.private_size;
      return HSA_STATUS_SUCCESS;
    case 15: /* HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK: the
                fixtures' kernels use none. */
      *(bool *)value = false;
      return HSA_STATUS_SUCCESS;
  } else switch (attribute) {
    case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS:
      *(uint64_t *)value = s.addr;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE:
      *(uint32_t *)value = (uint32_t)s.size;
      return HSA_STATUS_SUCCESS;
  }
  return HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_executable_iterate_agent_symbols(
    hsa_executable_t executable, hsa_agent_t agent,
    hsa_status_t (*callback)(hsa_executable_t, hsa_agent_t,
                             hsa_executable_symbol_t, void *),
    void *data) {
  SIM_ENTER("hsa_executable_iterate_agent_symbols");
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!sim_agent_valid(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  pthread_mutex_lock(&sim_exe_mu);
  struct sim_exe *x = find_exe(executable);
  size_t n = x ? x->nsyms : 0;
  pthread_mutex_unlock(&sim_exe_mu);
  if (!x) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (agent.handle != SIM_GPU_AGENT) return HSA_STATUS_SUCCESS;
  for (size_t i = 0; i < n; i++) {
    hsa_status_t rc = callback(executable, agent, sym_handle(executable, i), data);
    if (rc != HSA_STATUS_SUCCESS) return rc;
  }
  return HSA_STATUS_SUCCESS;
}
