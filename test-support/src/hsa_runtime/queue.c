/*
 * AQL queues: a ring of 64-byte packets in host memory, read and write
 * indices, a doorbell signal, and one packet processor thread per queue
 * that runs the packet at the read index once its header's type is no
 * longer INVALID (in order, so the barrier bit holds trivially): kernel
 * dispatches (kernels.c, over every work-item of the grid) and barrier-AND
 * packets. A processed packet's header goes back to INVALID and the read
 * index on, then its completion signal is decremented. A malformed packet
 * or a kernel fault goes to the queue's error callback and stops the
 * queue: later packets never run, their signals never change.
 */
#include "core.h"
#include "exe.h"
#include "kernels.h"
#include "memory.h"
#include "queue.h"
#include "signal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define QUEUE_MAGIC 0x5155455545534d51ull

struct sim_queue {
  hsa_queue_t q; /* first: the pointer handed out */
  uint64_t magic;
  uint64_t read, write;
  pthread_t thread;
  sim_queue_callback callback;
  void *data;
  bool stop, failed;
  struct sim_queue *next;
};

static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sim_queue *queues;
static long live_queues;
static uint64_t next_id;
static long packets;

long sim_queue_count(void) {
  pthread_mutex_lock(&q_mu);
  long n = live_queues;
  pthread_mutex_unlock(&q_mu);
  return n;
}

/* Packets whose body changed after their header was published. */
static long late_bodies;

EXPORT long sim_hsa_late_bodies(void) {
  return __atomic_load_n(&late_bodies, __ATOMIC_RELAXED);
}

EXPORT long sim_hsa_packets(void) {
  return __atomic_load_n(&packets, __ATOMIC_RELAXED);
}

static struct sim_queue *of(const hsa_queue_t *q, const char *what) {
  struct sim_queue *s = (struct sim_queue *)q;
  if (!s || s->magic != QUEUE_MAGIC) sim_abort("%s: %p is not a queue", what, (void *)q);
  return s;
}

static uint8_t *slot_of(struct sim_queue *s, uint64_t index) {
  return (uint8_t *)s->q.base_address + (index % s->q.size) * 64;
}

static uint32_t header_type(const uint8_t *slot) {
  return __atomic_load_n((const uint32_t *)slot, __ATOMIC_ACQUIRE) & 0xff;
}

void sim_queue_check_unused(uint64_t lo, uint64_t hi, const char *what) {
  pthread_mutex_lock(&q_mu);
  for (struct sim_queue *s = queues; s; s = s->next) {
    uint64_t r = __atomic_load_n(&s->read, __ATOMIC_ACQUIRE);
    uint64_t w = __atomic_load_n(&s->write, __ATOMIC_ACQUIRE);
    if (w - r > s->q.size) w = r + s->q.size;
    for (uint64_t i = r; i < w; i++) {
      uint8_t *slot = slot_of(s, i);
      uint64_t object;
      memcpy(&object, slot + 32, 8);
      if (header_type(slot) == HSA_PACKET_TYPE_KERNEL_DISPATCH &&
          object >= lo && object < hi)
        sim_abort("%s: queue %llu still holds a dispatch of one of its "
                  "kernels (packet %llu)",
                  what, (unsigned long long)s->q.id, (unsigned long long)i);
    }
  }
  pthread_mutex_unlock(&q_mu);
}

static uint16_t u16_at(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint32_t u32_at(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64_at(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Waits for each nonzero dependency to reach 0; false if the queue is
 * being destroyed meanwhile. */
static bool barrier(struct sim_queue *s, const uint8_t *slot) {
  pthread_mutex_lock(&sim_sig_mu);
  for (int i = 0; i < 5; i++) {
    hsa_signal_t dep = {u64_at(slot + 8 + 8 * i)};
    if (!dep.handle) continue;
    while (sim_signal_value_locked(dep) != 0) {
      if (s->stop) {
        pthread_mutex_unlock(&sim_sig_mu);
        return false;
      }
      sim_sig_wait_a_little();
    }
  }
  pthread_mutex_unlock(&sim_sig_mu);
  return true;
}

static hsa_status_t dispatch(struct sim_queue *s, const uint8_t *slot) {
  uint16_t setup = u16_at(slot + 2);
  uint32_t wg[3] = {u16_at(slot + 4), u16_at(slot + 6), u16_at(slot + 8)};
  uint32_t grid[3] = {u32_at(slot + 12), u32_at(slot + 16), u32_at(slot + 20)};
  uint32_t group = u32_at(slot + 28);
  uint64_t object = u64_at(slot + 32), kernarg = u64_at(slot + 40);
  unsigned dims = setup & 3;
  if (dims == 0 || !wg[0] || !wg[1] || !wg[2] || !grid[0] || !grid[1] ||
      !grid[2] || wg[0] * wg[1] * wg[2] > 1024 || group > 65536) {
    fprintf(stderr,
            "simulated HSA runtime: queue %llu: a malformed dispatch (setup %u, "
            "work-group %ux%ux%u, grid %ux%ux%u, group segment %u)\n",
            (unsigned long long)s->q.id, setup, wg[0], wg[1], wg[2], grid[0],
            grid[1], grid[2], group);
    return HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
  }
  struct sim_dispatch_kernel k;
  if (!sim_kernel_begin(object, &k)) {
    fprintf(stderr,
            "simulated HSA runtime: queue %llu: a dispatch of 0x%llx, no "
            "loaded kernel object\n",
            (unsigned long long)s->q.id, (unsigned long long)object);
    return HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
  }
  hsa_status_t rc = HSA_STATUS_SUCCESS;
  if (!sim_gpu_host(kernarg, k.kernarg_size ? k.kernarg_size : 1)) {
    fprintf(stderr,
            "simulated HSA runtime: queue %llu: `%s` dispatched with kernel "
            "arguments at 0x%llx, not %u bytes of host memory the GPU may "
            "reach\n",
            (unsigned long long)s->q.id, k.name, (unsigned long long)kernarg,
            k.kernarg_size);
    rc = HSA_STATUS_ERROR_INVALID_ARGUMENT;
  } else if (!k.fn) {
    fprintf(stderr,
            "simulated HSA runtime: the kernel `%s` has no implementation in "
            "the simulator\n",
            k.name);
    rc = HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION;
  } else {
    sim_item it = {{0}, {grid[0], grid[1], grid[2]},
                   (const uint8_t *)(uintptr_t)kernarg, k.exe,
                   {wg[0], wg[1], wg[2]}};
    uint32_t n[3];
    for (int d = 0; d < 3; d++) n[d] = (grid[d] + wg[d] - 1) / wg[d];
    for (uint64_t bz = 0; bz < n[2] && !rc; bz++)
      for (uint64_t by = 0; by < n[1] && !rc; by++)
        for (uint64_t bx = 0; bx < n[0] && !rc; bx++)
          for (uint64_t lz = 0; lz < wg[2] && !rc; lz++)
            for (uint64_t ly = 0; ly < wg[1] && !rc; ly++)
              for (uint64_t lx = 0; lx < wg[0] && !rc; lx++) {
                it.gid[0] = bx * wg[0] + lx;
                it.gid[1] = by * wg[1] + ly;
                it.gid[2] = bz * wg[2] + lz;
                if (it.gid[0] >= grid[0] || it.gid[1] >= grid[1] ||
                    it.gid[2] >= grid[2])
                  continue; /* a partial last work-group */
                rc = k.fn(&it);
              }
  }
  sim_kernel_end(k.exe);
  return rc;
}

/* hsa_amd_register_system_event_handler's list. */
typedef hsa_status_t (*system_event_handler)(const void *event, void *data);
static struct {
  system_event_handler fn;
  void *data;
} system_handlers[64];
static int n_system_handlers;
static pthread_mutex_t system_mu = PTHREAD_MUTEX_INITIALIZER;

EXPORT hsa_status_t hsa_amd_register_system_event_handler(
    system_event_handler callback, void *data) {
  SIM_ENTER("hsa_amd_register_system_event_handler");
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  pthread_mutex_lock(&system_mu);
  hsa_status_t rc = HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (n_system_handlers < 64) {
    system_handlers[n_system_handlers].fn = callback;
    system_handlers[n_system_handlers++].data = data;
    rc = HSA_STATUS_SUCCESS;
  }
  pthread_mutex_unlock(&system_mu);
  return rc;
}

/* hsa_amd_event_t for HSA_AMD_GPU_MEMORY_FAULT_EVENT (hsa_ext_amd.h):
 * event type, then the fault info (agent, address, reason mask). */
struct memory_fault_event {
  uint32_t event_type;
  uint32_t pad;
  uint64_t agent;
  uint64_t virtual_address;
  uint32_t fault_reason_mask;
};

static void memory_fault(struct sim_queue *s, uint64_t addr) {
  struct memory_fault_event e = {0, 0, SIM_GPU_AGENT, addr, 1 /* PAGE_NOT_PRESENT */};
  bool handled = false;
  pthread_mutex_lock(&system_mu);
  int n = n_system_handlers;
  pthread_mutex_unlock(&system_mu);
  for (int i = 0; i < n; i++)
    if (system_handlers[i].fn(&e, system_handlers[i].data) == HSA_STATUS_SUCCESS)
      handled = true;
  if (!handled) {
    fprintf(stderr,
            "simulated HSA runtime: Memory access fault by GPU (queue %llu) on "
            "address 0x%llx. Reason: Page not present or supervisor "
            "privilege.\n",
            (unsigned long long)s->q.id, (unsigned long long)addr);
    abort();
  }
}

static void *processor(void *arg) {
  struct sim_queue *s = arg;
  pthread_mutex_lock(&sim_sig_mu);
  for (;;) {
    if (s->stop) break;
    uint64_t r = __atomic_load_n(&s->read, __ATOMIC_ACQUIRE);
    uint8_t *slot = slot_of(s, r);
    uint32_t type = header_type(slot);
    if (s->failed || type == HSA_PACKET_TYPE_INVALID) {
      sim_sig_wait_a_little();
      continue;
    }
    pthread_mutex_unlock(&sim_sig_mu);
    hsa_status_t rc = HSA_STATUS_SUCCESS;
    /* The producer owns the body until it publishes the header (last, with
     * a release store): a body that still changes after the header became
     * valid was written too late, and a packet processor may already have
     * read garbage. Look twice, a little apart. */
    uint8_t body[60];
    memcpy(body, slot + 4, 60);
    usleep(100);
    if (memcmp(body, slot + 4, 60) != 0) {
      __atomic_add_fetch(&late_bodies, 1, __ATOMIC_RELAXED);
      fprintf(stderr,
              "simulated HSA runtime: queue %llu: packet %llu changed after "
              "its header was published\n",
              (unsigned long long)s->q.id, (unsigned long long)r);
      rc = HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
      type = HSA_PACKET_TYPE_INVALID;
    }
    if (rc != HSA_STATUS_SUCCESS) {
    } else if (type == HSA_PACKET_TYPE_BARRIER_AND) {
      if (!barrier(s, slot)) {
        pthread_mutex_lock(&sim_sig_mu);
        break;
      }
    } else if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      rc = dispatch(s, slot);
    } else {
      fprintf(stderr,
              "simulated HSA runtime: queue %llu: packet %llu has type %u, "
              "which the simulator does not process\n",
              (unsigned long long)s->q.id, (unsigned long long)r, type);
      rc = HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
    }
    if (rc != HSA_STATUS_SUCCESS) {
      pthread_mutex_lock(&sim_sig_mu);
      s->failed = true;
      pthread_mutex_unlock(&sim_sig_mu);
      if (rc == HSA_STATUS_ERROR_MEMORY_FAULT) {
        /* As ROCr: a GPU memory fault is not reported to the queue's
         * callback but to the system event handlers; when none takes it,
         * the runtime ends the process. */
        memory_fault(s, __atomic_load_n(&sim_fault_address, __ATOMIC_RELAXED));
      } else if (s->callback)
        s->callback(rc, &s->q, s->data);
      else
        fprintf(stderr, "simulated HSA runtime: queue %llu failed (0x%x)\n",
                (unsigned long long)s->q.id, rc);
      pthread_mutex_lock(&sim_sig_mu);
      continue;
    }
    hsa_signal_t done = {u64_at(slot + 56)};
    /* Poison the consumed body, so a producer that publishes a header
     * before its body leaves this garbage for the processor to find. */
    memset(slot + 4, 0xa5, 60);
    __atomic_store_n((uint32_t *)slot, HSA_PACKET_TYPE_INVALID, __ATOMIC_RELEASE);
    __atomic_store_n(&s->read, r + 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&packets, 1, __ATOMIC_RELAXED);
    if (done.handle) sim_signal_add(done, -1);
    pthread_mutex_lock(&sim_sig_mu);
  }
  pthread_mutex_unlock(&sim_sig_mu);
  return NULL;
}

EXPORT hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size,
                                     uint32_t type, sim_queue_callback callback,
                                     void *data, uint32_t private_segment_size,
                                     uint32_t group_segment_size,
                                     hsa_queue_t **queue) {
  SIM_ENTER("hsa_queue_create");
  (void)private_segment_size;
  (void)group_segment_size;
  if (!sim_agent_valid(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (agent.handle != SIM_GPU_AGENT) return HSA_STATUS_ERROR_INVALID_QUEUE_CREATION;
  if (!queue || size < 16 || size > SIM_QUEUE_MAX || (size & (size - 1)) ||
      type > HSA_QUEUE_TYPE_SINGLE)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  struct sim_queue *s = calloc(1, sizeof *s);
  if (!s) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  void *ring = mmap(NULL, (size_t)size * 64, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ring == MAP_FAILED) {
    free(s);
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  for (uint32_t i = 0; i < size; i++)
    *(uint32_t *)((uint8_t *)ring + (size_t)i * 64) = HSA_PACKET_TYPE_INVALID;
  hsa_signal_t doorbell;
  hsa_status_t rc = hsa_signal_create(0, 0, NULL, &doorbell);
  if (rc != HSA_STATUS_SUCCESS) {
    munmap(ring, (size_t)size * 64);
    free(s);
    return rc;
  }
  s->q = (hsa_queue_t){type, HSA_QUEUE_FEATURE_KERNEL_DISPATCH, ring, doorbell,
                       size, 0, 0};
  s->magic = QUEUE_MAGIC;
  s->callback = callback;
  s->data = data;
  pthread_mutex_lock(&q_mu);
  s->q.id = next_id++;
  if (pthread_create(&s->thread, NULL, processor, s) != 0)
    sim_abort("cannot start a packet processor thread");
  s->next = queues;
  queues = s;
  live_queues++;
  pthread_mutex_unlock(&q_mu);
  *queue = &s->q;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t *queue) {
  SIM_ENTER("hsa_queue_destroy");
  pthread_mutex_lock(&q_mu);
  struct sim_queue **at = &queues;
  while (*at && &(*at)->q != queue) at = &(*at)->next;
  struct sim_queue *s = *at;
  if (s) {
    *at = s->next;
    live_queues--;
  }
  pthread_mutex_unlock(&q_mu);
  if (!s) return HSA_STATUS_ERROR_INVALID_QUEUE;
  pthread_mutex_lock(&sim_sig_mu);
  s->stop = true;
  pthread_cond_broadcast(&sim_sig_cond);
  pthread_mutex_unlock(&sim_sig_mu);
  pthread_join(s->thread, NULL);
  hsa_signal_destroy(s->q.doorbell_signal);
  munmap(s->q.base_address, (size_t)s->q.size * 64);
  s->magic = 0;
  free(s);
  return HSA_STATUS_SUCCESS;
}

EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *queue) {
  return __atomic_load_n(&of(queue, "hsa_queue_load_read_index_scacquire")->read,
                         __ATOMIC_ACQUIRE);
}

EXPORT uint64_t hsa_queue_load_write_index_relaxed(const hsa_queue_t *queue) {
  return __atomic_load_n(&of(queue, "hsa_queue_load_write_index_relaxed")->write,
                         __ATOMIC_RELAXED);
}

EXPORT uint64_t hsa_queue_add_write_index_screlease(const hsa_queue_t *queue,
                                                    uint64_t value) {
  return __atomic_fetch_add(&of(queue, "hsa_queue_add_write_index_screlease")->write,
                            value, __ATOMIC_RELEASE);
}
