/* SPDX-License-Identifier: MIT */
#include "fs/stop_reason.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/driver/mountinfo.h"
#include "core/driver/proc_files.h"
#include "core/model/log.h"

/*
 * Set by the handler, read after the loop: process-wide by nature (a signal
 * handler reaches nothing else).  The handler runs on whichever thread took
 * the signal, not the one that reads, so these are atomics (lock-free, so
 * safe in a handler), not volatile sig_atomic_t: stop_sig is stored last,
 * with release, and read first, with acquire.
 */
static int stop_sig, stop_pid, stop_code;
static struct sigaction previous[2];
static const int stop_signals[2] = { SIGTERM, SIGINT };
static int armed;

/* Async-signal-safe: stores, then libfuse's handler (which ends the loop). */
static void on_stop_signal(int sig, siginfo_t *info, void *uc)
{
	int i = sig == SIGTERM ? 0 : 1;

	if (!__atomic_load_n(&stop_sig, __ATOMIC_RELAXED)) { /* the first one says why; a second only repeats it */
		__atomic_store_n(&stop_pid, info ? info->si_pid : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&stop_code, info ? info->si_code : 0, __ATOMIC_RELAXED);
		__atomic_store_n(&stop_sig, sig, __ATOMIC_RELEASE);
	}
	if (previous[i].sa_flags & SA_SIGINFO) {
		if (previous[i].sa_sigaction)
			previous[i].sa_sigaction(sig, info, uc);
	} else if (previous[i].sa_handler != SIG_DFL && previous[i].sa_handler != SIG_IGN) {
		previous[i].sa_handler(sig);
	} else if (previous[i].sa_handler == SIG_DFL) {
		signal(sig, SIG_DFL); /* libfuse installed nothing: the default action, as before */
		raise(sig);
	}
}

int fs_stop_reason_arm(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_stop_signal;
	sa.sa_flags = SA_SIGINFO; /* as libfuse's own (no SA_RESTART): the loop's wait must see the signal */
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 2; i++)
		if (sigaction(stop_signals[i], &sa, &previous[i]))
			return -errno;
	armed = 1;
	return 0;
}

void fs_stop_reason_disarm(void)
{
	if (!armed)
		return;
	for (int i = 0; i < 2; i++)
		sigaction(stop_signals[i], &previous[i], NULL);
	armed = 0;
}

void fs_stop_reason_log(int loop, const char *mountpoint, unsigned conn, unsigned request_timeout_s)
{
	char timeout[160] = "";

	struct accel_mount_entry m;
	char comm[64];
	int sig = __atomic_load_n(&stop_sig, __ATOMIC_ACQUIRE);

	if (sig) {
		int pid = __atomic_load_n(&stop_pid, __ATOMIC_RELAXED);
		int code = __atomic_load_n(&stop_code, __ATOMIC_RELAXED);

		accel_proc_comm(pid, comm, sizeof(comm)); /* "" when it is gone by now */
		if (code == SI_USER || code == SI_TKILL || code == SI_QUEUE)
			log_notice("stopping: %s from pid %d%s%s%s", sig == SIGTERM ? "SIGTERM" : "SIGINT", pid,
			           *comm ? " (" : " (gone)", comm, *comm ? ")" : "");
		else
			log_notice("stopping: %s from the kernel (a terminal's ^C, si_code %d)",
			           sig == SIGTERM ? "SIGTERM" : "SIGINT", code);
		return;
	}
	/*
	 * The kernel answers the daemon ENODEV both for an unmount and for an
	 * abort; only the abort leaves the tree mounted (until accelfs unmounts
	 * it below).  /proc/self/mountinfo is read, the mountpoint never
	 * stat'ed: on an aborted mount that would fail or wait.
	 */
	if (conn && accel_mount_at(mountpoint, &m) && !strncmp(m.type, "fuse", 4) &&
	    accel_mount_fuse_conn(&m) == conn) {
		if (request_timeout_s)
			snprintf(timeout, sizeof(timeout),
			         ", or the kernel's bound on an answer ran out: a request waited more than %u s "
			         "(fs.fuse.default_request_timeout, max_request_timeout)",
			         request_timeout_s);
		log_error("the FUSE connection %u of %s was aborted while still mounted (its abort file under "
		          "/sys/fs/fuse/connections was written, or umount -f%s): nobody asked accelfs to stop; "
		          "reads in flight got ECONNABORTED, later ones ENOTCONN",
		          conn, mountpoint, timeout);
		return;
	}
	if (loop < 0)
		log_error("the FUSE session of %s ended on an error: %s", mountpoint, strerror(-loop));
	else
		log_notice("unmounted %s (umount or fusermount3 -u)", mountpoint);
}
