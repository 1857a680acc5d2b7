/* SPDX-License-Identifier: MIT */
#include "fs/crashguard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs/fusectl.h"
#include "fs/mountinfo.h"

/*
 * Process-wide by nature: a signal handler can reach nothing else.  Set
 * once by fs_crashguard_arm before any handler is installed.
 */
static int abort_fd = -1;
static struct sigaction previous[NSIG];

/* The signals that end the process by default and that a handler can catch. */
static const int fatal_signals[] = {
	SIGSEGV, SIGBUS,  SIGILL,  SIGFPE,  SIGABRT,   SIGSYS,  SIGTRAP, SIGQUIT,
	SIGXCPU, SIGXFSZ, SIGUSR1, SIGUSR2, SIGSTKFLT, SIGALRM, SIGPWR,
};

static void abort_connection(void)
{
	if (abort_fd >= 0 && write(abort_fd, "1", 1) != 1) {
		/* Nothing more can be done from here: the successor's takeover is the backstop. */
	}
}

/* Async-signal-safe throughout: write, sigaction, raise. */
static void on_fatal_signal(int sig, siginfo_t *info, void *uc)
{
	struct sigaction *old = &previous[sig];

	abort_connection();
	sigaction(sig, old, NULL);
	if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
		old->sa_sigaction(sig, info, uc); /* a sanitizer's report, say */
		return;
	}
	if (!(old->sa_flags & SA_SIGINFO) && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	}
	/* The default action: delivered when this handler returns (a fault re-faults anyway). */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal_signal;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		int sig = fatal_signals[i];

		if (sigaction(sig, NULL, &previous[sig]))
			continue;
		if (!(previous[sig].sa_flags & SA_SIGINFO) && previous[sig].sa_handler == SIG_IGN)
			continue; /* ignored on purpose (by the caller that started us): not fatal here */
		sigaction(sig, &sa, NULL);
	}
}

/*
 * The guardian, in the forked child: only async-signal-safe calls (the
 * parent has threads).  It holds no descriptor but the abort file: not
 * /dev/fuse (the kernel would never see the daemon's last close), not the
 * state lock (a successor would be refused).
 */
static void guardian(pid_t daemon, int fd)
{
	sigset_t wake;
	siginfo_t info;

	if (fd > 3 && dup2(fd, 3) == 3)
		fd = 3;
	syscall(SYS_close_range, fd + 1, ~0U, 0);
	for (int i = 0; i < fd; i++)
		close(i);
	prctl(PR_SET_NAME, "accelfs-guard");
	sigemptyset(&wake);
	sigaddset(&wake, SIGUSR1);
	/* All signals are blocked (the parent forked with them blocked): SIGTERM for the unit waits too. */
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
	if (getppid() == daemon) {
		for (;;) {
			int sig = sigwaitinfo(&wake, &info);
			/*
			 * The kernel sends the death signal in the name of the
			 * exiting thread, so si_pid is the daemon's: anyone else's
			 * SIGUSR1 is not the daemon's death.
			 */
			if (sig == SIGUSR1 && info.si_pid == daemon)
				break;
		}
	}
	/* The main thread is gone (or was before we could ask for the signal): the daemon is ending. */
	if (write(fd, "1", 1) != 1) {
		/* nothing else to try */
	}
	/* No exit handlers, no leak report of a copy of the daemon's heap (valgrind, LeakSanitizer). */
	kill(getpid(), SIGKILL);
	_exit(0);
}

static int fork_guardian(int fd, char *err, size_t len)
{
	sigset_t all, old;
	pid_t daemon = getpid(), pid;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid == 0)
		guardian(daemon, fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		snprintf(err, len, "cannot start the process that aborts the mount's connection if accelfs dies: %s",
		         strerror(errno));
		return -1;
	}
	return 0;
}

int fs_crashguard_arm(const char *mountpoint, unsigned *conn, char *err, size_t len)
{
	struct fs_mount_entry m;
	int fd;

	*conn = 0;
	if (!fs_mount_at(mountpoint, &m) || strncmp(m.type, "fuse", 4)) {
		snprintf(err, len,
		         "the new mount on %s is not in /proc/self/mountinfo: cannot find its FUSE connection",
		         mountpoint);
		return -1;
	}
	*conn = fs_mount_fuse_conn(&m);
	fd = fs_fusectl_open_abort(*conn, err, len);
	if (fd < 0)
		return -1;
	abort_fd = fd;
	install_handlers();
	return fork_guardian(fd, err, len);
}
