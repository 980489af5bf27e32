/* Runs a host kernel so that a fault inside it (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL) returns to the caller instead of killing the process.
 *
 * reprise_guarded_call() copies what the handler needs (the kernel's code
 * ranges and name, the thread's stack bounds) into the calling thread's
 * guard state, saves the context there with sigsetjmp, marks the thread as
 * guarded, calls the callback, and clears the mark. The guard state is
 * thread-local (initial-exec TLS), not on the stack: a kernel that overruns
 * a stack buffer upward writes over the frames above its own, and the
 * handler must not take its decision, or the context it jumps to, from
 * there. The process-wide handler installed by reprise_guard_install()
 * jumps back with siglongjmp only when
 *   - the faulting thread is guarded,
 *   - the fault is synchronous: raised by the kernel for the instruction the
 *     thread was running (si_code > 0, less the asynchronous codes, see
 *     synchronous()), and
 *   - that instruction lies in the kernel's own code: the executable
 *     segments of the image it came from, or the fault is the fetch of an
 *     instruction at a bad address that a call from there, or a return,
 *     led to (see from_kernel()).
 * Before it jumps it checks that the jump is safe: the guard state is
 * intact (a worker's TLS lies at the top of its stack mapping, above all
 * of its frames: see struct thread_guard), and so is the canary in
 * reprise_guarded_call()'s frame, between the kernel's frames and its
 * callers' (see canary_intact()). An overrun that reached either has
 * overwritten the frames that the return after the jump runs on: the
 * handler writes one line to stderr and ends the process (SIGABRT)
 * instead; see die_overwritten(). reprise_guarded_call() checks both again
 * after the kernel returned, and the canary after the jump.
 *
 * A fault inside a library the kernel called (libc's memset, malloc,
 * printf, ...) is not caught: that code may hold a lock (malloc's arena,
 * stdio's), and the worker, which allocates right after a caught fault,
 * would wait on it forever.
 *
 * Every other signal goes to the handler that was installed before (Rust's
 * stack-overflow reporter, a debugger's, ...), or gets the default action
 * back, so a fault repeats and ends the process as it would have without
 * this file. When that is about to happen to a fault of a guarded thread
 * (the default action is back once the previous handler, if any, has
 * returned), the handler writes one line to stderr saying why the fault
 * was not caught (write(2) only); see report_outside().
 *
 * Only x86-64 reads the faulting instruction's address (REG_RIP); on other
 * machines nothing is caught (the host executor runs kernels on x86-64
 * only).
 *
 * The callback and everything it calls must be "plain old frames": no
 * destructors or cleanups pending, since siglongjmp skips them. See
 * guard.rs for the Rust side and the limitations. */

#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* Linux's values, for C libraries whose headers lack them. */
#ifndef BUS_MCEERR_AO
#define BUS_MCEERR_AO 5
#endif
#ifndef SEGV_MTEAERR
#define SEGV_MTEAERR 8
#endif

/* What a caught fault was: filled in by the handler, in the guard state,
 * and copied out by reprise_guard_fault(). Mirrors Caught in guard.rs. */
struct reprise_fault {
    int signo;
    int code;
    uintptr_t addr;
    uintptr_t sp;
};

/* The running kernel's code: the executable ranges [start, end) of its
 * image, and its name (not NUL-terminated) for the message of a fault
 * outside them; and the calling thread's stack [stack_lo, stack_hi), read
 * before the call (0, 0: unknown), the only memory the handler reads
 * words of the stack from. Mirrors RawCode in guard.rs. Read only by
 * reprise_guarded_call(), which copies it: the handler never reads it. */
struct reprise_code {
    const uintptr_t (*text)[2];
    size_t ntext;
    const char *name;
    size_t name_len;
    uintptr_t stack_lo;
    uintptr_t stack_hi;
};

/* The most code ranges and name bytes the guard state holds. An image
 * has one executable segment, or a few; a fault in a range past the
 * GUARD_TEXT_MAX-th is not caught (it ends the process, with the
 * message). The message names at most GUARD_NAME_MAX bytes of the
 * kernel's name. */
#define GUARD_TEXT_MAX 16
#define GUARD_NAME_MAX 200

/* What the handler reads, and jumps with, for the running kernel: copied
 * from struct reprise_code before the call, and covered by the checksum
 * (all of it, padding included: set to zero first). */
struct guarded {
    sigjmp_buf env;
    uintptr_t text[GUARD_TEXT_MAX][2];
    size_t ntext;
    uintptr_t stack_lo;
    uintptr_t stack_hi;
    /* The canary's value, and where reprise_guarded_call() keeps its copy:
     * in its own frame. */
    uintptr_t canary;
    const volatile uintptr_t *canary_at;
    size_t name_len;
    char name[GUARD_NAME_MAX];
};

/* The values of `armed` and `not_armed` (its complement): idle (a
 * thread's TLS starts so), and inside a kernel's call. Any other pair: an
 * overrun wrote over them. */
#define IDLE ((uintptr_t)0)
#define ARMED ((uintptr_t)0x7265707269736521u)

/* A thread's guard state. `check`: the checksum of `g`, written before
 * `armed` is set. `armed`: ARMED inside reprise_guarded_call()'s call of
 * the kernel (the handler's jump disarms it), else IDLE.
 *
 * A worker thread's TLS lies at the top of its stack mapping (glibc puts
 * the static TLS blocks and the thread's descriptor there), above all of
 * its frames, the descriptor highest. An overrun long enough to reach past
 * this struct has written over `armed` and `not_armed`, its last members
 * (the highest addresses), before it reached the descriptor: then the
 * handler sees a pair that is neither idle nor armed, and uses nothing
 * that reads the descriptor (see die()). An overrun that stopped inside
 * the struct leaves the descriptor intact, and the checksum catches it. */
struct thread_guard {
    struct guarded g;
    uint64_t check;
    struct reprise_fault fault;
    uint64_t calls;
    volatile uintptr_t armed;
    volatile uintptr_t not_armed;
};

/* initial-exec: reading it in the signal handler never allocates (a
 * global-dynamic access may call __tls_get_addr, which may allocate), and
 * a member's read goes through the thread pointer, a register (%fs on
 * x86-64), not through memory an overrun may have written. Taking its
 * address reads the descriptor's self pointer: done only once `armed`
 * says the descriptor is intact. */
static __thread struct thread_guard state
    __attribute__((tls_model("initial-exec"))) = {.not_armed = ~IDLE};

/* What `armed` says: -1 neither idle nor armed (overwritten), 0 idle, 1
 * armed. Reads only the two words, through the thread pointer. */
static int armed_state(void) {
    uintptr_t a = state.armed, n = state.not_armed;
    if (n != ~a || (a != IDLE && a != ARMED))
        return -1;
    return a == ARMED;
}

static void set_armed(uintptr_t a) {
    state.armed = a;
    state.not_armed = ~a;
}

static const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NSIGNALS (sizeof signals / sizeof signals[0])
static struct sigaction previous[NSIGNALS];

/* Whether the signal is a fault of the instruction this thread was
 * running. si_code <= 0: sent by kill, tgkill, sigqueue or raise. Two
 * positive codes of these signals are asynchronous: SIGBUS BUS_MCEERR_AO
 * (a memory error found in the background, "action optional"; its
 * synchronous sibling BUS_MCEERR_AR is a fault of the instruction) and
 * SIGSEGV SEGV_MTEAERR (an arm64 tag-check fault reported late). The
 * SIGFPE and SIGILL codes are all synchronous, as are SI_KERNEL faults
 * (a general-protection fault, such as an access to a non-canonical
 * address). */
static int synchronous(int sig, const siginfo_t *info) {
    if (info == NULL || info->si_code <= 0)
        return 0;
    if (sig == SIGBUS && info->si_code == BUS_MCEERR_AO)
        return 0;
    if (sig == SIGSEGV && info->si_code == SEGV_MTEAERR)
        return 0;
    return 1;
}

/* The faulting instruction's address, or 0 where this machine's is not
 * read. */
static uintptr_t fault_pc(const void *uctx) {
#if defined(__x86_64__)
    return (uintptr_t)((const ucontext_t *)uctx)->uc_mcontext.gregs[REG_RIP];
#else
    (void)uctx;
    return 0;
#endif
}

static int in_text(const struct guarded *c, uintptr_t pc) {
    for (size_t i = 0; i < c->ntext && i < GUARD_TEXT_MAX; i++)
        if (pc >= c->text[i][0] && pc < c->text[i][1])
            return 1;
    return 0;
}

/* Whether the signal is the fetch of an instruction at a bad address (a
 * call or jump through a wild function pointer, a return through an
 * overwritten return address): SIGSEGV for the instruction's own address.
 * Then no instruction there ran at all. */
static int bad_fetch(int sig, const siginfo_t *info, uintptr_t pc) {
    return sig == SIGSEGV && (uintptr_t)info->si_addr == pc;
}

/* The stack pointer at the fault, or 0 where this machine's is not read. */
static uintptr_t fault_sp(const void *uctx) {
#if defined(__x86_64__)
    return (uintptr_t)((const ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP];
#else
    (void)uctx;
    return 0;
#endif
}

/* Reads the word at addr into *out, only when all of it lies in the
 * thread's stack as read before the call: the stack pointer at a bad fetch
 * can be anything (a `leave` with a corrupted frame pointer, a kernel's
 * own asm), and a read that faulted here, with the signal blocked, would
 * end the process without a word. Returns whether it read. */
static int read_stack(const struct guarded *c, uintptr_t addr,
                      uintptr_t *out) {
    if (c->stack_hi < c->stack_lo + sizeof *out || addr < c->stack_lo ||
        addr > c->stack_hi - sizeof *out)
        return 0;
    memcpy(out, (const void *)addr, sizeof *out);
    return 1;
}

/* Whether the stack pointer lies outside the thread's stack (known), where
 * no word next to it is read. */
static int sp_outside_stack(const struct guarded *c, uintptr_t sp) {
    return c->stack_hi > c->stack_lo && (sp < c->stack_lo || sp > c->stack_hi);
}

/* Whether the fault stopped the kernel's own code: the faulting instruction
 * is in its image, or it is a bad fetch (no instruction at the bad address
 * ran) that one of these led to:
 *   - a call from the kernel's code: the word at the stack pointer, the
 *     return address the call just pushed, lies in its image;
 *   - a return: the word just below the stack pointer, the slot that `ret`
 *     popped, equals the bad address (it is still there: below the stack
 *     pointer only a signal frame is written, on the alternate stack or
 *     past the red zone). Which code ran that `ret` cannot be read; it is
 *     taken to be the kernel's. A return slot holds a bad address when a
 *     buffer below it was overrun, and an overrun by the kernel's code
 *     reaches its own frames and its callers', never those of a library it
 *     called: they lie below its own, and are gone before its code runs
 *     again. A library's return slot is overrun by the library itself (a
 *     bug of its own, with the kernel's input; a distribution's glibc,
 *     built with a stack protector, aborts before that return), or by the
 *     kernel's code that it called back (qsort's comparison) writing past
 *     its own return slot, which that code returns through first, and that
 *     return is caught. The
 *     first is the one fault this rule takes for the kernel's wrongly: a
 *     lock the library held stays held.
 * Only words inside the thread's stack are read (read_stack()). A stack
 * pointer elsewhere tells nothing (it was corrupted, or code runs on a
 * stack of its own, such as a coroutine's), and the fault is not taken for
 * the kernel's: catching it wrongly would risk a hang, leaving it ends the
 * process with a message, as without this file. A tail jump leaves the
 * caller's return address at the stack pointer, and below it a word that
 * equals the bad address only by chance: it is not caught either. A
 * `ret imm16` (the callee pops its arguments: not in the x86-64 ABIs) moves
 * the stack pointer past the slot, and is not caught. */
static int from_kernel(const struct guarded *c, int sig,
                       const siginfo_t *info, const void *uctx, uintptr_t pc) {
    if (pc == 0)
        return 0;
    if (in_text(c, pc))
        return 1;
    if (!bad_fetch(sig, info, pc))
        return 0;
    uintptr_t sp = fault_sp(uctx), word;
    if (read_stack(c, sp, &word) && in_text(c, word))
        return 1; /* a call */
    if (read_stack(c, sp - sizeof word, &word) && word == pc)
        return 1; /* a return */
    return 0;
}

/* A line under construction, for write(2): no stdio in a signal handler. */
struct line {
    char buf[512];
    size_t len;
};

static void put(struct line *l, const char *s, size_t n) {
    if (n > sizeof l->buf - l->len)
        n = sizeof l->buf - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void put_str(struct line *l, const char *s) { put(l, s, strlen(s)); }

static void put_hex(struct line *l, uintptr_t v) {
    char digits[2 + 2 * sizeof v];
    size_t i = sizeof digits;
    do {
        digits[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v != 0);
    digits[--i] = 'x';
    digits[--i] = '0';
    put(l, digits + i, sizeof digits - i);
}

static const char *signal_name(int sig) {
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    default: return "SIGILL";
    }
}

/* Writes the line to stderr, with write(2) only, through syscall(): not
 * glibc's write(), a cancellation point, which reads the thread's
 * descriptor (see die()). errno is not read (its address comes from the
 * descriptor), and is not restored either: every line is followed by the
 * end of the process. */
static void write_all(int fd, const char *buf, size_t len) {
    for (size_t done = 0, tries = 0; done < len && tries < 8; tries++) {
        long n = syscall(SYS_write, (long)fd, buf + done, len - done);
        if (n > 0)
            done += (size_t)n;
    }
}

/* Where fault reports go besides stderr (reprise_guard_report_to()); -1
 * for nowhere. */
static volatile int report_fd = -1;

/* Writes the line to stderr, and to the report descriptor after "fatal ":
 * the process ends after it. */
static void write_line(const struct line *l) {
    /* The parent's pipe first: once this handler restored the default
     * action, another thread's fault ends the process at once, and the
     * parent reads only the pipe. */
    int fd = report_fd;
    if (fd >= 0) {
        struct line r;
        r.len = 0;
        put_str(&r, "fatal ");
        put(&r, l->buf, l->len);
        write_all(fd, r.buf, r.len);
    }
    write_all(STDERR_FILENO, l->buf, l->len);
}

/* Sends fault reports to `fd` too (a pipe a parent process reads), or to
 * nowhere but stderr when `fd` is negative. */
void reprise_guard_report_to(int fd) { report_fd = fd; }

/* Writes `len` bytes to the report descriptor, if there is one. */
void reprise_guard_report(const char *buf, size_t len) {
    int fd = report_fd;
    if (fd >= 0)
        write_all(fd, buf, len);
}

/* The name of the kernel the process last started, process-wide: a fault
 * on another thread (one the kernel's runtime started, running its code)
 * is said to come after it. Written before the call, read only by the
 * handler of a fault that ends the process. */
static char last_name[GUARD_NAME_MAX];
static volatile size_t last_len;

static void put_name(struct line *l, const struct guarded *c) {
    size_t n = c->name_len;
    put(l, c->name, n > GUARD_NAME_MAX ? GUARD_NAME_MAX : n);
}

/* Says why a fault of the guarded thread was not caught, just before the
 * default action ends the process: it was not in the kernel's own code.
 * Said only then, since a previous handler that returns with its own
 * handler still in place may have repaired the fault (a library that maps
 * pages on demand), and the instruction then runs again as if nothing had
 * happened. */
static void report_outside(const struct guarded *c, int sig,
                           const siginfo_t *info, const void *uctx,
                           uintptr_t pc) {
    struct line l;
    l.len = 0;
    put_str(&l, "reprise: the kernel `");
    put_name(&l, c);
    if (bad_fetch(sig, info, pc)) {
        /* A call, jump or return: the kernel's, or a library's it called. */
        uintptr_t sp = fault_sp(uctx);
        put_str(&l, "` continued at ");
        put_hex(&l, pc);
        put_str(&l, ", outside its own code");
        if (sp_outside_stack(c, sp)) {
            put_str(&l, ", with the stack pointer at ");
            put_hex(&l, sp);
            put_str(&l, ", outside its thread's stack");
        }
        put_str(&l, " (");
        put_str(&l, signal_name(sig));
    } else {
        put_str(&l, "` faulted inside a library it called (");
        put_str(&l, signal_name(sig));
        put_str(&l, " at ");
        put_hex(&l, (uintptr_t)info->si_addr);
        put_str(&l, ", instruction ");
        put_hex(&l, pc);
    }
    put_str(&l, "); the process cannot continue safely\n");
    write_line(&l);
}

/* The files the executor mapped into memory (a region or a buffer mapped
 * from a snapshot or a chunk file), so that a SIGBUS on one of their pages
 * (a file truncated after it was mapped) names the file rather than
 * passing for a fault of the image. Entries are written by ordinary
 * threads and read by the handler: `mapped_state` is 0 (free), 2 (being
 * written or cleared) or 1 (whole), with release and acquire. */
#define MAPPED_MAX 256
#define MAPPED_PATH 256
struct mapped {
    uintptr_t start, end;
    size_t path_len;
    char path[MAPPED_PATH];
};
static struct mapped mapped[MAPPED_MAX];
static int mapped_state[MAPPED_MAX];

/* Notes that `[start, start + len)` maps the file `path` (its first `n`
 * bytes kept) from its start. Returns 0, or -1 when the table is full. */
int reprise_guard_note_file(uintptr_t start, size_t len, const char *path,
                            size_t n) {
    for (size_t i = 0; i < MAPPED_MAX; i++) {
        int free_ = 0;
        if (!__atomic_compare_exchange_n(&mapped_state[i], &free_, 2, 0,
                                         __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            continue;
        mapped[i].start = start;
        mapped[i].end = start + len;
        mapped[i].path_len = n > MAPPED_PATH ? MAPPED_PATH : n;
        memcpy(mapped[i].path, path, mapped[i].path_len);
        __atomic_store_n(&mapped_state[i], 1, __ATOMIC_RELEASE);
        return 0;
    }
    return -1;
}

/* Forgets every noted file mapped inside `[start, start + len)`. */
void reprise_guard_forget_files(uintptr_t start, size_t len) {
    for (size_t i = 0; i < MAPPED_MAX; i++) {
        int whole = 1;
        if (__atomic_load_n(&mapped_state[i], __ATOMIC_ACQUIRE) != 1)
            continue;
        if (mapped[i].start < start || mapped[i].end > start + len)
            continue;
        if (__atomic_compare_exchange_n(&mapped_state[i], &whole, 2, 0,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            __atomic_store_n(&mapped_state[i], 0, __ATOMIC_RELEASE);
    }
}

/* The noted file mapped at `addr`, if any (safe in a signal handler). */
static const struct mapped *file_at(uintptr_t addr) {
    for (size_t i = 0; i < MAPPED_MAX; i++) {
        if (__atomic_load_n(&mapped_state[i], __ATOMIC_ACQUIRE) == 1 &&
            mapped[i].start <= addr && addr < mapped[i].end)
            return &mapped[i];
    }
    return NULL;
}

/* Copies the path of the file mapped at `addr` into `buf` (at most `cap`
 * bytes) and its offset into `*offset`; returns the path's length, 0 when
 * no noted file is mapped there. */
size_t reprise_guard_file_at(uintptr_t addr, char *buf, size_t cap,
                             uintptr_t *offset) {
    const struct mapped *m = file_at(addr);
    if (m == NULL)
        return 0;
    size_t n = m->path_len < cap ? m->path_len : cap;
    memcpy(buf, m->path, n);
    *offset = addr - m->start;
    return n;
}

/* Says, just before the default action ends the process, that a page of a
 * mapped capture file could not be read: the file changed (was truncated)
 * after it was mapped. Returns whether `addr` is in one. */
static int report_mapped_file(int sig, const siginfo_t *info) {
    if (sig != SIGBUS)
        return 0;
    const struct mapped *m = file_at((uintptr_t)info->si_addr);
    if (m == NULL)
        return 0;
    struct line l;
    l.len = 0;
    put_str(&l, "reprise: the file ");
    put(&l, m->path, m->path_len);
    put_str(&l, " changed under the replay: reading it at offset ");
    put_hex(&l, (uintptr_t)info->si_addr - m->start);
    put_str(&l, " faulted (SIGBUS), so it is shorter than when it was mapped "
                "(truncated or replaced while the replay ran)\n");
    write_line(&l);
    return 1;
}

/* Says, just before the default action ends the process, that a thread
 * outside any guarded call faulted after a kernel had started: typically a
 * thread of the runtime the kernel called (OpenMP's team), running the
 * kernel's code at a bad address. */
static void report_other_thread(int sig, const siginfo_t *info,
                                uintptr_t pc) {
    struct line l;
    l.len = 0;
    put_str(&l, "reprise: a thread running outside the guarded call faulted (");
    put_str(&l, signal_name(sig));
    put_str(&l, " at ");
    put_hex(&l, (uintptr_t)info->si_addr);
    put_str(&l, ", instruction ");
    put_hex(&l, pc);
    put_str(&l, ") after the kernel `");
    size_t n = last_len;
    put(&l, last_name, n > GUARD_NAME_MAX ? GUARD_NAME_MAX : n);
    put_str(&l, "` started (a thread of a runtime it called, such as OpenMP's "
                "team, running its code); the process cannot continue safely\n");
    write_line(&l);
}

/* The checksum of the guard state's copied part, all of its bytes. Seeded
 * with a constant, so that a state of zeros does not match a checksum of
 * zero. */
static uint64_t checksum(const struct guarded *c) {
    const unsigned char *p = (const unsigned char *)c;
    uint64_t h = 0x6a09e667f3bcc909u;
    for (size_t i = 0; i + sizeof h <= sizeof *c; i += sizeof h) {
        uint64_t w;
        memcpy(&w, p + i, sizeof w);
        h = (h ^ w) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    return h;
}

/* Whether the copied part of the guard state is as reprise_guarded_call()
 * left it (see struct thread_guard). Called when armed_state() says 1. */
static int state_intact(void) { return state.check == checksum(&state.g); }

/* Whether the canary in reprise_guarded_call()'s frame still holds the
 * value it was given. That frame lies between the kernel's frames (and
 * the two the jump skips) and its callers': an overrun upward from the
 * kernel's frames reaches the callers' only over the canary. The word is
 * read only where the state says, which the checksum vouches for, and
 * only inside the thread's stack when its bounds are known (it lies in a
 * live frame of this thread's stack either way). */
static int canary_intact(void) {
    const struct guarded *c = &state.g;
    uintptr_t at = (uintptr_t)c->canary_at, word;
    if (c->stack_hi > c->stack_lo)
        return read_stack(c, at, &word) && word == c->canary;
    return *c->canary_at == c->canary;
}

/* Ends the process as abort() does, by SIGABRT's default action, without
 * the C library's abort() or raise(): glibc's read the thread's
 * descriptor (pthread_self()), at the top of the thread's stack mapping,
 * which an overrun may have reached. sigaction() and sigprocmask() are
 * plain system calls in glibc; the signal is sent by tgkill(2) through
 * syscall(), and the default action ends the process before the call
 * returns. */
__attribute__((noreturn)) static void die(void) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGABRT, &dfl, NULL);
    sigset_t abrt;
    sigemptyset(&abrt);
    sigaddset(&abrt, SIGABRT);
    sigprocmask(SIG_UNBLOCK, &abrt, NULL);
    syscall(SYS_tgkill, (long)getpid(), syscall(SYS_gettid), (long)SIGABRT);
    for (;;)
        syscall(SYS_exit_group, 128L + SIGABRT);
}

/* Ends the process (die()), after saying why: the kernel overwrote the
 * stack above its own frames, which the return to the guarded call's
 * caller runs on (`intact_state`: the guard state is intact, and says
 * which kernel ran), or the guard state itself, at the top of the stack
 * mapping. `sig`: the fault that found it (0: found after the kernel's
 * return, or after the jump back). */
__attribute__((noreturn)) static void
die_overwritten(int intact_state, int sig, const siginfo_t *info,
                uintptr_t pc) {
    struct line l;
    l.len = 0;
    if (intact_state) {
        put_str(&l, "reprise: the kernel `");
        put_name(&l, &state.g);
        put_str(&l, "` overwrote the stack above its own frames");
    } else {
        put_str(&l, "reprise: a kernel overwrote its thread's stack up to "
                    "the fault guard's state at its top");
    }
    if (sig != 0) {
        put_str(&l, " (");
        put_str(&l, signal_name(sig));
        put_str(&l, " at ");
        put_hex(&l, (uintptr_t)info->si_addr);
        put_str(&l, ", instruction ");
        put_hex(&l, pc);
        put_str(&l, ")");
    }
    put_str(&l, "; the process cannot continue safely\n");
    write_line(&l);
    die();
}

/* Whether the signal's action is the default one now: for a fault, the
 * instruction runs again on return, faults again and ends the process (an
 * ignored fault gets the default action too). */
static int default_now(int sig) {
    struct sigaction now;
    if (sigaction(sig, NULL, &now) != 0)
        return 0;
    return now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN;
}

/* Hands the signal to the handler installed before, or takes the default
 * action. `fault`: the signal is a synchronous fault, which returning
 * retries. Returns whether the default action is back for a fault: then
 * returning ends the process. */
static int chain(int sig, siginfo_t *info, void *uctx, int fault) {
    for (size_t i = 0; i < NSIGNALS; i++) {
        if (signals[i] != sig)
            continue;
        const struct sigaction *p = &previous[i];
        /* sa_handler and sa_sigaction share their storage: SIG_DFL and
         * SIG_IGN are told apart before either is called, whatever
         * SA_SIGINFO says. */
        if (p->sa_handler == SIG_IGN) {
            if (!fault)
                return 0; /* a sent signal that was ignored before: still is */
            break; /* the kernel never lets a fault be ignored */
        }
        if (p->sa_handler != SIG_DFL) {
            if (p->sa_flags & SA_SIGINFO)
                p->sa_sigaction(sig, info, uctx);
            else
                p->sa_handler(sig);
            /* It returned: it repaired the fault, or (Rust's, for a fault
             * outside a guard page) restored the default action. */
            return fault && default_now(sig);
        }
        break;
    }
    /* No previous handler (or SIG_IGN for a fault): restore the default
     * action. A fault repeats when the instruction is retried on return;
     * any other signal is sent again (it stays blocked until this handler
     * returns). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (!fault)
        raise(sig);
    return fault;
}

/* Reads and writes only the guard state (TLS), words inside the thread's
 * stack (read_stack()), and the process-wide previous actions: never the
 * frames above the kernel's, which the kernel may have overwritten. */
static void handler(int sig, siginfo_t *info, void *uctx) {
    int fault = synchronous(sig, info);
    int armed = fault ? armed_state() : 0;
    if (armed != 0) {
        uintptr_t pc = fault_pc(uctx);
        if (armed < 0 || !state_intact())
            die_overwritten(0, sig, info, pc);
        if (from_kernel(&state.g, sig, info, uctx, pc)) {
            /* The jump returns into reprise_guarded_call()'s frame, and
             * from there to its callers: not over an overwritten stack. */
            if (!canary_intact())
                die_overwritten(1, sig, info, pc);
            state.fault.signo = sig;
            state.fault.code = info->si_code;
            state.fault.addr = (uintptr_t)info->si_addr;
            state.fault.sp = fault_sp(uctx);
            set_armed(IDLE);
            siglongjmp(state.g.env, 1);
        }
        if (chain(sig, info, uctx, fault) && pc != 0 &&
            !report_mapped_file(sig, info))
            report_outside(&state.g, sig, info, uctx, pc);
        return;
    }
    if (chain(sig, info, uctx, fault) && fault &&
        !report_mapped_file(sig, info) && last_len > 0)
        report_other_thread(sig, info, fault_pc(uctx));
}

/* Installs the handler for every guarded signal. Call once per process.
 * Returns 0, or an errno value. */
int reprise_guard_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    /* SA_ONSTACK: a stack overflow leaves no stack to run on but the
     * alternate one. No SA_NODEFER: a fault inside the handler itself is
     * fatal, and siglongjmp restores the mask sigsetjmp saved. */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSIGNALS; i++) {
        /* Read the previous action first, so that the handler never sees
         * a half-written one. */
        if (sigaction(signals[i], NULL, &previous[i]) != 0)
            return errno;
        if (sigaction(signals[i], &sa, NULL) != 0)
            return errno;
    }
    return 0;
}

/* A fresh canary value: the random bytes the kernel gave the process
 * (AT_RANDOM; glibc's stack protector and pointer guard use the first 16,
 * this reads them, it does not change them), mixed with the thread, the
 * call and the frame, so that no value a kernel writes matches it but by
 * chance. */
static uintptr_t new_canary(const volatile uintptr_t *at) {
    uint64_t x = (uint64_t)(uintptr_t)&state ^ (uint64_t)(uintptr_t)at ^
                 (++state.calls * 0x9e3779b97f4a7c15u);
    const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
    if (rnd != NULL) {
        uint64_t r;
        memcpy(&r, rnd + 8, sizeof r);
        x ^= r;
    }
    /* splitmix64's finalizer. */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    x ^= x >> 31;
    return (uintptr_t)x;
}

/* Calls f(data) on this thread with faults of the code in `code` caught.
 * Returns 0 when f returned, 1 when it faulted (then reprise_guard_fault()
 * says how), -1 without calling f when this thread is inside a guarded
 * call already (a guarded call cannot nest: there is one guard state per
 * thread), or its guard state is neither idle nor armed. `code` is read
 * (copied) before f is called, and never again: the handler reads the
 * copy, in TLS. Ends the process, after saying why, when f overwrote the
 * canary in this frame (see canary_intact()), whose callers' frames, above
 * this one, are not to be returned into, or the guard state. */
int reprise_guarded_call(void (*f)(void *), void *data,
                         const struct reprise_code *code) {
    /* Volatile: in memory, in this frame, and read again after the jump. */
    volatile uintptr_t canary;
    if (armed_state() != 0)
        return -1;
    struct guarded *g = &state.g;
    memset(g, 0, sizeof *g); /* padding too: the checksum reads it */
    g->ntext = code->ntext < GUARD_TEXT_MAX ? code->ntext : GUARD_TEXT_MAX;
    for (size_t i = 0; i < g->ntext; i++) {
        g->text[i][0] = code->text[i][0];
        g->text[i][1] = code->text[i][1];
    }
    g->name_len =
        code->name_len < GUARD_NAME_MAX ? code->name_len : GUARD_NAME_MAX;
    memcpy(g->name, code->name, g->name_len);
    memcpy(last_name, g->name, g->name_len);
    last_len = g->name_len;
    g->stack_lo = code->stack_lo;
    g->stack_hi = code->stack_hi;
    g->canary = new_canary(&canary);
    g->canary_at = &canary;
    canary = g->canary;
    memset(&state.fault, 0, sizeof state.fault);
    /* savemask = 1: the jump back restores the signal mask, unblocking the
     * signal that the handler was running for. */
    if (sigsetjmp(g->env, 1) != 0) {
        /* The handler disarmed the state, and checked the canary before it
         * jumped; checked again here, where the return would use it. */
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        if (canary != state.g.canary)
            die_overwritten(1, 0, NULL, 0);
        return 1;
    }
    state.check = checksum(g);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    set_armed(ARMED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    f(data);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    /* f returned, but may have overwritten the stack above its frames all
     * the same (a buffer it overran, then returned from over a return
     * address it left as it was). The guard state first: the canary's
     * value is there. */
    int intact = armed_state() == 1 && state_intact();
    set_armed(IDLE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    if (!intact)
        die_overwritten(0, 0, NULL, 0);
    if (canary != state.g.canary)
        die_overwritten(1, 0, NULL, 0);
    return 0;
}

/* Copies the last fault caught on this thread into *out. */
void reprise_guard_fault(struct reprise_fault *out) { *out = state.fault; }
