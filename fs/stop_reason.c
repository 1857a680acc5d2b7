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

/* Set by the handler, read after the loop: process-wide by nature (a signal handler reaches nothing else). */
static volatile sig_atomic_t stop_sig, stop_pid, stop_code;
static struct sigaction previous[2];
static const int stop_signals[2] = { SIGTERM, SIGINT };
static int armed;

/* Async-signal-safe: stores, then libfuse's handler (which ends the loop). */
static void on_stop_signal(int sig, siginfo_t *info, void *uc)
{
	int i = sig == SIGTERM ? 0 : 1;

	if (!stop_sig) { /* the first one says why; a second only repeats it */
		stop_pid = info ? info->si_pid : 0;
		stop_code = info ? info->si_code : 0;
		stop_sig = sig;
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

	if (stop_sig) {
		int pid = stop_pid;

		accel_proc_comm(pid, comm, sizeof(comm)); /* "" when it is gone by now */
		if (stop_code == SI_USER || stop_code == SI_TKILL || stop_code == SI_QUEUE)
			log_notice("stopping: %s from pid %d%s%s%s", stop_sig == SIGTERM ? "SIGTERM" : "SIGINT", pid,
			           *comm ? " (" : " (gone)", comm, *comm ? ")" : "");
		else
			log_notice("stopping: %s from the kernel (a terminal's ^C, si_code %d)",
			           stop_sig == SIGTERM ? "SIGTERM" : "SIGINT", (int)stop_code);
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
