/* SPDX-License-Identifier: MIT */
#include "fs/takeover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "core/model/log.h"
#include "core/driver/proc_life.h"
#include "fs/fusectl.h"
#include "core/driver/mountinfo.h"
#include "fs/startup.h"

/* How long a holder whose connection was aborted may take to finish dying (a core dump included). */
#define TAKEOVER_WAIT_MS 10000
#define TAKEOVER_STEP_MS 20

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR) {
	}
}

/*
 * Abort what the holder recorded, if it is still its mount: where it is
 * mounted and the connection is live.  A holder that is dying still holds
 * /dev/fuse, so its connection's number cannot have been given to another
 * mount; checking the mountpoint too costs nothing.
 */
static void abort_holders_connection(const struct startup_lock_holder *h, char *note, size_t len)
{
	struct accel_mount_entry m;
	char err[512];

	if (!h->conn) {
		log_warn("accelfs pid %d died before its mount was up: no connection to abort", h->pid);
		return;
	}
	if (accel_mount_at(h->mountpoint, &m) && accel_mount_fuse_conn(&m) != h->conn)
		log_warn("the mount on %s is not the one accelfs pid %d recorded (connection %u): aborting "
		         "connection %u by its number only",
		         h->mountpoint, h->pid, h->conn, h->conn);
	if (!fs_fusectl_exists(h->conn)) {
		log_info("the FUSE connection %u of accelfs pid %d is already gone", h->conn, h->pid);
		return;
	}
	if (fs_fusectl_abort(h->conn, err, sizeof(err)))
		log_error("%s: accelfs pid %d and the callers of %s stay blocked until it is aborted", err, h->pid,
		          h->mountpoint);
	else
		snprintf(note, len,
		         "aborted the FUSE connection %u of %s: callers still waiting on the dead accelfs get an "
		         "error (ECONNABORTED) instead of hanging",
		         h->conn, h->mountpoint);
}

int takeover_dead_holder(const char *state_dir, char *note, size_t len)
{
	char aborted[PATH_MAX + 200] = "";
	char path[PATH_MAX], why[512];
	struct startup_lock_holder h;
	enum accel_proc_life life;
	int fd;

	if (snprintf(path, sizeof(path), "%s/accelfs.lock", state_dir) >= (int)sizeof(path))
		return 0; /* the lock step says so */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (!flock(fd, LOCK_EX | LOCK_NB) || errno != EWOULDBLOCK || startup_lock_read(fd, &h)) {
		close(fd); /* free (the holder is gone), or held by a daemon still starting */
		return 0;
	}
	life = accel_proc_life("/proc", h.pid, why, sizeof(why));
	if (life == ACCEL_PROC_ALIVE || life == ACCEL_PROC_GONE) {
		/* Serving (the lock refuses us later, naming it), or the lock is another process's: same. */
		close(fd);
		return 0;
	}
	snprintf(note, len, "accelfs pid %d, which served %s from %s, was %s", h.pid, h.mountpoint, state_dir, why);
	log_warn("%s", note);
	abort_holders_connection(&h, aborted, sizeof(aborted));
	for (int waited = 0; waited < TAKEOVER_WAIT_MS; waited += TAKEOVER_STEP_MS) {
		if (!flock(fd, LOCK_EX | LOCK_NB)) {
			close(fd);
			if (*aborted)
				log_warn("%s", aborted);
			snprintf(note + strlen(note), len - strlen(note), "%s%s; it has gone: taking over %s",
			         *aborted ? "; " : "", aborted, state_dir);
			return 0;
		}
		sleep_ms(TAKEOVER_STEP_MS);
	}
	life = accel_proc_life("/proc", h.pid, why, sizeof(why));
	close(fd);
	if (life == ACCEL_PROC_GONE)
		return 0; /* went at the last moment: the lock step takes it, or names who holds it */
	fprintf(stderr,
	        "accelfs: accelfs pid %d, which holds %s, is %s, and did not go within %d s of its "
	        "connection being aborted; cat /proc/%d/task/*/stack shows where it is stuck\n",
	        h.pid, state_dir, why, TAKEOVER_WAIT_MS / 1000, h.pid);
	return STARTUP_REFUSED;
}
