/* SPDX-License-Identifier: MIT */
#include "fs/takeover.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
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
 * Whether connection number h->conn still names the holder's connection.
 * A dying holder still holding /dev/fuse does not keep its number: an
 * unmount of its mount (umount -l by a person, or any unmount once nothing
 * is open there) frees it, and the next FUSE mount on the machine gets it
 * (fs/fusectl.h).  The holder recorded which connection it was; a record
 * of an older accelfs, without it, is believed only where the holder's
 * mountpoint still stands on that number.
 */
static bool still_holders_connection(const struct startup_lock_holder *h)
{
	struct accel_mount_entry m;

	if (h->conn_id)
		return fs_fusectl_id(h->conn) == h->conn_id;
	return accel_mount_at(h->mountpoint, &m) && !strncmp(m.type, "fuse", 4) && accel_mount_fuse_conn(&m) == h->conn;
}

/*
 * Abort what the holder recorded, if that connection is still there and
 * still the holder's; true when it was aborted.  What was done, or left
 * alone and why, is said in said ("" when nothing is worth the log file).
 */
static bool abort_holders_connection(const struct startup_lock_holder *h, char *said, size_t len)
{
	char err[512];

	if (!h->conn) {
		log_warn("accelfs pid %d died before its mount was up: no connection to abort", h->pid);
		return false;
	}
	if (!fs_fusectl_exists(h->conn)) {
		log_info("the FUSE connection %u of accelfs pid %d is already gone", h->conn, h->pid);
		return false;
	}
	if (!still_holders_connection(h)) {
		/* Aborting it would fail every caller of someone else's mount: never. */
		snprintf(said, len,
		         "FUSE connection %u is no longer the one accelfs pid %d had on %s (its mount is gone and "
		         "the kernel gave the number to another mount): that one is left alone",
		         h->conn, h->pid, h->mountpoint);
		return false;
	}
	if (fs_fusectl_abort(h->conn, err, sizeof(err))) {
		log_error("%s: accelfs pid %d and the callers of %s stay blocked until it is aborted", err, h->pid,
		          h->mountpoint);
		return false;
	}
	snprintf(said, len,
	         "aborted the FUSE connection %u of %s: callers still waiting on the dead accelfs get an error "
	         "(ECONNABORTED) instead of hanging",
	         h->conn, h->mountpoint);
	return true;
}

/*
 * A holder that has let go of its mount (umount, fusermount3 -u: the
 * connection it recorded is gone) is stopping, and lets go of the lock as
 * it exits, a moment after the umount returned.  A start right then, as in
 * `umount /accel; accelfs ...`, waits for that instead of being refused.
 */
static bool holder_is_stopping(const struct startup_lock_holder *h)
{
	return h->conn && h->conn_id && fs_fusectl_id(h->conn) != h->conn_id;
}

/* The lock on fd taken within TAKEOVER_WAIT_MS: the milliseconds it took, or -1. */
static int wait_for_lock(int fd)
{
	for (int waited = 0; waited < TAKEOVER_WAIT_MS; waited += TAKEOVER_STEP_MS) {
		if (!flock(fd, LOCK_EX | LOCK_NB))
			return waited;
		sleep_ms(TAKEOVER_STEP_MS);
	}
	return -1;
}

static int wait_for_stopping_holder(int fd, const struct startup_lock_holder *h, const char *state_dir, char *note,
                                    size_t len)
{
	int waited = wait_for_lock(fd);

	close(fd);
	if (waited >= 0) {
		snprintf(note, len,
		         "accelfs pid %d, which served %s from %s, had unmounted it and was stopping: waited %d ms for "
		         "it to let go",
		         h->pid, h->mountpoint, state_dir, waited);
		return 0;
	}
	fprintf(stderr,
	        "accelfs: accelfs pid %d, which holds %s, has unmounted %s but did not exit within %d s; cat "
	        "/proc/%d/task/*/stack shows where it is, and it can be stopped with kill %d\n",
	        h->pid, state_dir, h->mountpoint, TAKEOVER_WAIT_MS / 1000, h->pid, h->pid);
	return STARTUP_REFUSED;
}

int takeover_dead_holder(const char *state_dir, char *note, size_t len, bool *routine)
{
	char said[PATH_MAX + 300] = "";
	bool aborted;
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
	if (life == ACCEL_PROC_ALIVE && holder_is_stopping(&h)) {
		*routine = true; /* `umount /accel; accelfs ...`: nothing went wrong */
		return wait_for_stopping_holder(fd, &h, state_dir, note, len);
	}
	if (life == ACCEL_PROC_ALIVE || life == ACCEL_PROC_GONE) {
		/* Serving (the lock refuses us later, naming it), or the lock is another process's: same. */
		close(fd);
		return 0;
	}
	snprintf(note, len, "accelfs pid %d, which served %s from %s, was %s", h.pid, h.mountpoint, state_dir, why);
	log_warn("%s", note);
	aborted = abort_holders_connection(&h, said, sizeof(said));
	if (*said)
		log_warn("%s", said);
	if (wait_for_lock(fd) >= 0) {
		close(fd);
		snprintf(note + strlen(note), len - strlen(note), "%s%s; it has gone: taking over %s",
		         *said ? "; " : "", said, state_dir);
		return 0;
	}
	life = accel_proc_life("/proc", h.pid, why, sizeof(why));
	close(fd);
	if (life == ACCEL_PROC_GONE)
		return 0; /* went at the last moment: the lock step takes it, or names who holds it */
	fprintf(stderr,
	        "accelfs: accelfs pid %d, which holds %s, is %s, and did not go within %d s%s; cat "
	        "/proc/%d/task/*/stack shows where it is stuck\n",
	        h.pid, state_dir, why, TAKEOVER_WAIT_MS / 1000, aborted ? " of its connection being aborted" : "",
	        h.pid);
	return STARTUP_REFUSED;
}
