/* SPDX-License-Identifier: MIT */
/*
 * A per-thread landing pad for SIGBUS/SIGSEGV.  The handler jumps back only
 * when the faulting thread is inside bs_guarded_copy(); otherwise it hands
 * the signal to whatever handler was there before (a sanitizer's, or the
 * default action, which then kills the process as it would have anyway).
 */
#include "barswap/bs_guard.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static __thread sigjmp_buf *volatile landing;
static struct sigaction previous[2]; /* SIGBUS, SIGSEGV */
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sigaction *previous_of(int sig)
{
	return &previous[sig == SIGBUS ? 0 : 1];
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *old = previous_of(sig);

	if (landing)
		siglongjmp(*landing, 1);
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, si, uc);
		return;
	}
	if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/* Default action: restore it and let the faulting instruction run again. */
	sigaction(sig, old, NULL);
}

/*
 * Ours, unless someone installed a handler since (a test framework does, per
 * test): then ours goes in front of theirs again, and theirs is the one
 * chained to.  Two cheap syscalls per copy.
 */
static void install(void)
{
	static const int sigs[2] = { SIGBUS, SIGSEGV };
	struct sigaction cur, sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 2; i++) {
		if (sigaction(sigs[i], NULL, &cur) || ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault))
			continue;
		pthread_mutex_lock(&install_lock);
		if (!sigaction(sigs[i], NULL, &cur) && !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fault)) {
			previous[i] = cur;
			sigaction(sigs[i], &sa, NULL);
		}
		pthread_mutex_unlock(&install_lock);
	}
}

int bs_guarded_copy(void *dst, const void *src, size_t n)
{
	sigjmp_buf jb;
	/* volatile: read after the longjmp */
	volatile int ret = 0;

	install();
	/* savemask 1: the handler runs with the signal blocked unless SA_NODEFER; restore the mask either way. */
	if (sigsetjmp(jb, 1)) {
		ret = -EFAULT;
	} else {
		landing = &jb;
		/* The handler must see the landing pad before the copy starts, and until it ends. */
		atomic_signal_fence(memory_order_seq_cst);
		memcpy(dst, src, n);
		atomic_signal_fence(memory_order_seq_cst);
	}
	landing = NULL;
	return ret;
}
