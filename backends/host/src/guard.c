/* Runs a host kernel so that a fault inside it (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL) returns to the caller instead of killing the process.
 *
 * reprise_guarded_call() saves the context with sigsetjmp, marks the calling
 * thread as guarded (a thread-local pointer to its jump buffer), calls the
 * callback, and clears the mark. The process-wide handler installed by
 * reprise_guard_install() jumps back with siglongjmp only when the fault is
 * synchronous (raised by the kernel for an instruction, si_code > 0) and the
 * faulting thread is guarded; every other signal goes to the handler that was
 * installed before (Rust's stack-overflow reporter, a debugger's, ...), or
 * gets the default action back, so the fault repeats and ends the process as
 * it would have without this file.
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

/* What a caught fault was: filled in by the handler. Mirrors RawFault in
 * guard.rs. */
struct reprise_fault {
    int signo;
    int code;
    uintptr_t addr;
    uintptr_t sp;
};

struct guard {
    sigjmp_buf env;
    struct reprise_fault *out;
    struct guard *prev;
};

/* initial-exec: reading it in the signal handler never allocates (a
 * global-dynamic access may call __tls_get_addr, which may allocate). */
static __thread struct guard *volatile current
    __attribute__((tls_model("initial-exec")));

static const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NSIGNALS (sizeof signals / sizeof signals[0])
static struct sigaction previous[NSIGNALS];

static void handler(int sig, siginfo_t *info, void *uctx) {
    struct guard *g = current;
    /* si_code > 0: raised by the kernel for the faulting instruction, not
     * sent by kill/tgkill/sigqueue. */
    if (g != NULL && info != NULL && info->si_code > 0) {
        current = g->prev;
        g->out->signo = sig;
        g->out->code = info->si_code;
        g->out->addr = (uintptr_t)info->si_addr;
#if defined(__x86_64__)
        g->out->sp = (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RSP];
#else
        g->out->sp = 0;
#endif
        siglongjmp(g->env, 1);
    }
    for (size_t i = 0; i < NSIGNALS; i++) {
        if (signals[i] != sig)
            continue;
        const struct sigaction *p = &previous[i];
        if ((p->sa_flags & SA_SIGINFO) && p->sa_sigaction != NULL) {
            p->sa_sigaction(sig, info, uctx);
            return;
        }
        if (p->sa_handler == SIG_IGN && (info == NULL || info->si_code <= 0))
            return; /* a sent signal that was ignored before: still is */
        if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
            p->sa_handler(sig);
            return;
        }
        break;
    }
    /* No previous handler (or SIG_IGN for a fault, which the kernel would
     * not have ignored either): restore the default action. A fault repeats
     * when the instruction is retried on return; a sent signal is sent again
     * (it stays blocked until this handler returns). */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    if (info == NULL || info->si_code <= 0)
        raise(sig);
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

/* Calls f(data) on this thread with faults caught. Returns 0 when f
 * returned, 1 when it faulted (then *out says how). */
int reprise_guarded_call(void (*f)(void *), void *data,
                         struct reprise_fault *out) {
    struct guard g;
    g.out = out;
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
