/* Runs a host kernel so that a fault inside it (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL) returns to the caller instead of killing the process.
 *
 * reprise_guarded_call() saves the context with sigsetjmp, marks the calling
 * thread as guarded (a thread-local pointer to its jump buffer and to the
 * kernel's code ranges), calls the callback, and clears the mark. The
 * process-wide handler installed by reprise_guard_install() jumps back with
 * siglongjmp only when
 *   - the faulting thread is guarded,
 *   - the fault is synchronous: raised by the kernel for the instruction the
 *     thread was running (si_code > 0, less the asynchronous codes, see
 *     synchronous()), and
 *   - that instruction lies in the kernel's own code: the executable
 *     segments of the image it came from, or the fault is the fetch of an
 *     instruction at a bad address that a call from there, or a return,
 *     led to (see from_kernel()).
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
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

/* Linux's values, for C libraries whose headers lack them. */
#ifndef BUS_MCEERR_AO
#define BUS_MCEERR_AO 5
#endif
#ifndef SEGV_MTEAERR
#define SEGV_MTEAERR 8
#endif

/* What a caught fault was: filled in by the handler. Mirrors Caught in
 * guard.rs. */
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
 * words of the stack from. Mirrors RawCode in guard.rs. */
struct reprise_code {
    const uintptr_t (*text)[2];
    size_t ntext;
    const char *name;
    size_t name_len;
    uintptr_t stack_lo;
    uintptr_t stack_hi;
};

struct guard {
    sigjmp_buf env;
    struct reprise_fault *out;
    const struct reprise_code *code;
    struct guard *prev;
};

/* initial-exec: reading it in the signal handler never allocates (a
 * global-dynamic access may call __tls_get_addr, which may allocate). */
static __thread struct guard *volatile current
    __attribute__((tls_model("initial-exec")));

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

static int in_text(const struct reprise_code *c, uintptr_t pc) {
    for (size_t i = 0; i < c->ntext; i++)
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
static int read_stack(const struct reprise_code *c, uintptr_t addr,
                      uintptr_t *out) {
    if (c->stack_hi < c->stack_lo + sizeof *out || addr < c->stack_lo ||
        addr > c->stack_hi - sizeof *out)
        return 0;
    memcpy(out, (const void *)addr, sizeof *out);
    return 1;
}

/* Whether the stack pointer lies outside the thread's stack (known), where
 * no word next to it is read. */
static int sp_outside_stack(const struct reprise_code *c, uintptr_t sp) {
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
static int from_kernel(const struct reprise_code *c, int sig,
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

/* Says why a fault of the guarded thread was not caught, just before the
 * default action ends the process: it was not in the kernel's own code.
 * Said only then, since a previous handler that returns with its own
 * handler still in place may have repaired the fault (a library that maps
 * pages on demand), and the instruction then runs again as if nothing had
 * happened. */
static void report_outside(const struct reprise_code *c, int sig,
                           const siginfo_t *info, const void *uctx,
                           uintptr_t pc) {
    int saved = errno;
    struct line l;
    l.len = 0;
    put_str(&l, "reprise: the kernel `");
    put(&l, c->name, c->name_len > 200 ? 200 : c->name_len);
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
    for (size_t done = 0; done < l.len;) {
        ssize_t n = write(STDERR_FILENO, l.buf + done, l.len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    errno = saved;
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

static void handler(int sig, siginfo_t *info, void *uctx) {
    struct guard *g = current;
    int fault = synchronous(sig, info);
    if (g != NULL && fault) {
        uintptr_t pc = fault_pc(uctx);
        if (from_kernel(g->code, sig, info, uctx, pc)) {
            current = g->prev;
            g->out->signo = sig;
            g->out->code = info->si_code;
            g->out->addr = (uintptr_t)info->si_addr;
            g->out->sp = fault_sp(uctx);
            siglongjmp(g->env, 1);
        }
        if (chain(sig, info, uctx, fault) && pc != 0)
            report_outside(g->code, sig, info, uctx, pc);
        return;
    }
    chain(sig, info, uctx, fault);
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

/* Calls f(data) on this thread with faults of the code in `code` caught.
 * Returns 0 when f returned, 1 when it faulted (then *out says how).
 * `code` and what it points to must stay valid until this returns. */
int reprise_guarded_call(void (*f)(void *), void *data,
                         const struct reprise_code *code,
                         struct reprise_fault *out) {
    struct guard g;
    g.out = out;
    g.code = code;
    g.prev = current;
    /* savemask = 1: the jump back restores the signal mask, unblocking the
     * signal that the handler was running for. */
    if (sigsetjmp(g.env, 1) != 0)
        return 1; /* the handler restored `current` */
    current = &g;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    f(data);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    current = g.prev;
    return 0;
}
