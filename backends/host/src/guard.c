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
 *     segments of the image it came from (or the fault is the fetch of a
 *     bad call target, called from there; see from_kernel()).
 * A fault inside a library the kernel called (libc's memset, malloc,
 * printf, ...) is not caught: that code may hold a lock (malloc's arena,
 * stdio's), and the worker, which allocates right after a caught fault,
 * would wait on it forever. The handler writes one line to stderr saying
 * so (write(2) only) and lets the fault end the process as below.
 *
 * Every other signal goes to the handler that was installed before (Rust's
 * stack-overflow reporter, a debugger's, ...), or gets the default action
 * back, so a fault repeats and ends the process as it would have without
 * this file.
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
 * outside them. Mirrors RawCode in guard.rs. */
struct reprise_code {
    const uintptr_t (*text)[2];
    size_t ntext;
    const char *name;
    size_t name_len;
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

/* Set once the message about a fault outside a kernel's code is written:
 * a previous handler that returns without ending the process would
 * otherwise repeat it for every retry of the instruction. */
static volatile int reported;

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
 * call through a wild function pointer): SIGSEGV for the instruction's own
 * address. Then no instruction there ran at all. */
static int bad_fetch(int sig, const siginfo_t *info, uintptr_t pc) {
    return sig == SIGSEGV && (uintptr_t)info->si_addr == pc;
}

/* Whether the fault stopped the kernel's own code: the faulting instruction
 * is in its image, or it is a bad fetch whose return address (the word at
 * the stack pointer, which the call just pushed) is. A tail jump leaves the
 * caller's return address there instead, so it is not caught. */
static int from_kernel(const struct reprise_code *c, int sig,
                       const siginfo_t *info, const void *uctx, uintptr_t pc) {
    if (pc == 0)
        return 0;
    if (in_text(c, pc))
        return 1;
#if defined(__x86_64__)
    if (bad_fetch(sig, info, pc)) {
        uintptr_t sp =
            (uintptr_t)((const ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP];
        /* The call wrote this word, so it is mapped. (Were it not, reading
         * it would fault with the signal blocked, which ends the process,
         * as an uncaught fault does.) */
        if (sp != 0 && sp % sizeof(uintptr_t) == 0)
            return in_text(c, *(const volatile uintptr_t *)sp);
    }
#else
    (void)sig;
    (void)info;
    (void)uctx;
#endif
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

/* Says, once, that the guarded thread's kernel faulted outside its own
 * code. */
static void report_outside(const struct reprise_code *c, int sig,
                           const siginfo_t *info, uintptr_t pc) {
    if (__atomic_exchange_n(&reported, 1, __ATOMIC_SEQ_CST))
        return;
    int saved = errno;
    struct line l;
    l.len = 0;
    put_str(&l, "reprise: the kernel `");
    put(&l, c->name, c->name_len > 200 ? 200 : c->name_len);
    if (bad_fetch(sig, info, pc)) {
        put_str(&l, "` jumped to ");
        put_hex(&l, pc);
        put_str(&l, ", outside its own code (");
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

/* Hands the signal to the handler installed before, or takes the default
 * action. `fault`: the signal is a synchronous fault, which returning
 * retries. */
static void chain(int sig, siginfo_t *info, void *uctx, int fault) {
    for (size_t i = 0; i < NSIGNALS; i++) {
        if (signals[i] != sig)
            continue;
        const struct sigaction *p = &previous[i];
        /* sa_handler and sa_sigaction share their storage: SIG_DFL and
         * SIG_IGN are told apart before either is called, whatever
         * SA_SIGINFO says. */
        if (p->sa_handler == SIG_IGN) {
            if (!fault)
                return; /* a sent signal that was ignored before: still is */
            break; /* the kernel never lets a fault be ignored */
        }
        if (p->sa_handler != SIG_DFL) {
            if (p->sa_flags & SA_SIGINFO)
                p->sa_sigaction(sig, info, uctx);
            else
                p->sa_handler(sig);
            return;
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
#if defined(__x86_64__)
            g->out->sp =
                (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP];
#else
            g->out->sp = 0;
#endif
            siglongjmp(g->env, 1);
        }
        if (pc != 0)
            report_outside(g->code, sig, info, pc);
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
