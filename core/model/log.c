/* SPDX-License-Identifier: MIT */
#include "core/model/log.h"
#include "core/model/utc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static enum accel_log_level max_level = ACCEL_LOG_INFO;
static enum accel_log_level stderr_level = ACCEL_LOG_DEBUG;
/* Changed once the daemon's threads run (it leaves its terminal): read and written atomically. */
static bool to_syslog;
static bool to_stderr = true;
/* stderr is systemd's journal: lines carry their priority as "<N>" and no timestamp (journald adds one). */
static bool to_journal;
static int log_fd = -1;
/* The log file's absolute path, for a reopen after rotation (the daemon chdirs to /). */
static char log_path[PATH_MAX];
/* Set from a signal handler; the next message reopens the file (atomic_int is lock-free). */
static atomic_int reopen_wanted;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static const char *const level_names[] = { "error", "warning", "notice", "info", "debug" };

/*
 * JOURNAL_STREAM is "<device>:<inode>" of the stream systemd connected to
 * stdout/stderr.  It is inherited by children whose stderr is something
 * else, so it counts only when stderr is still that very stream.
 */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

int accel_log_level_from_env(enum accel_log_level *level)
{
	const char *s = getenv("ACCELFS_LOG");

	if (!s || !*s) {
		*level = ACCEL_LOG_INFO;
		return 0;
	}
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (!strcasecmp(s, level_names[i])) {
			*level = (enum accel_log_level)i;
			return 0;
		}
	return -EINVAL;
}

static void read_env_level(void)
{
	to_journal = stderr_is_journal();
	if (accel_log_level_from_env(&max_level))
		fprintf(stderr,
		        "%s: warning: ACCELFS_LOG=%s is not a level (error, warning, notice, info or debug); "
		        "logging at info\n",
		        program_invocation_short_name, getenv("ACCELFS_LOG"));
}

void accel_log_set_level(enum accel_log_level level)
{
	pthread_once(&env_once, read_env_level);
	max_level = level;
}

enum accel_log_level accel_log_get_level(void)
{
	pthread_once(&env_once, read_env_level);
	return max_level;
}

void accel_log_set_stderr_level(enum accel_log_level level)
{
	stderr_level = level;
}

void accel_log_use_syslog(bool on, bool also_stderr)
{
	__atomic_store_n(&to_syslog, on, __ATOMIC_RELAXED);
	__atomic_store_n(&to_stderr, also_stderr, __ATOMIC_RELAXED);
	if (on)
		openlog("accelfs", LOG_PID, LOG_DAEMON);
}

int accel_log_open_file(const char *path)
{
	char abs[PATH_MAX];
	int n, fd;

	if (path[0] == '/') {
		n = snprintf(abs, sizeof(abs), "%s", path);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		n = snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	}
	if (n < 0 || (size_t)n >= sizeof(abs))
		return -ENAMETOOLONG;
	fd = open(abs, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (log_fd >= 0)
		close(log_fd);
	log_fd = fd;
	memcpy(log_path, abs, (size_t)n + 1);
	return 0;
}

void accel_log_reopen(void)
{
	atomic_store(&reopen_wanted, 1);
}

/*
 * Called before a message is written.  The new file is put in place with
 * dup3 onto the same descriptor number, so a thread writing concurrently
 * writes whole lines to either the old file or the new one, never to a
 * descriptor that was closed and reused.  Only the thread that clears the
 * flag reopens.
 */
static void reopen_if_asked(void)
{
	int fd;

	if (!atomic_load(&reopen_wanted) || !atomic_exchange(&reopen_wanted, 0))
		return;
	if (log_fd < 0)
		return; /* no file: nothing to reopen */
	fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0 || dup3(fd, log_fd, O_CLOEXEC) < 0) {
		char line[PATH_MAX + 160];
		int n = snprintf(
			line, sizeof(line),
			"accelfs[%d] warning: cannot reopen the log file %s (%s): still writing to the old one; "
			"fix the directory and send SIGHUP again\n",
			(int)getpid(), log_path, strerror(errno));
		if (n > (int)sizeof(line) - 1)
			n = (int)sizeof(line) - 1;
		if (write(log_fd, line, (size_t)n) < 0)
			errno = 0;
	}
	if (fd >= 0)
		close(fd);
}

void accel_log(enum accel_log_level level, const char *fmt, ...)
{
	static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG };
	char msg[1024];
	va_list ap;

	pthread_once(&env_once, read_env_level);
	if (level > max_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	bool syslog_too = __atomic_load_n(&to_syslog, __ATOMIC_RELAXED);
	bool stderr_too = __atomic_load_n(&to_stderr, __ATOMIC_RELAXED);

	if (syslog_too)
		syslog(syslog_prio[level], "%s", msg);
	if (stderr_too || log_fd >= 0) {
		char line[1200], when[ACCEL_UTC_MAX];
		struct timespec ts;
		int n;

		clock_gettime(CLOCK_REALTIME, &ts);
		accel_utc_ms((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when, sizeof(when));
		n = snprintf(line, sizeof(line), "%s accelfs[%d] %s: %s\n", when, (int)getpid(), level_names[level],
		             msg);
		if (n > (int)sizeof(line) - 1)
			n = (int)sizeof(line) - 1;
		if (stderr_too && level <= stderr_level && to_journal) {
			/* sd-daemon(3)'s prefix: the journal files the line under that priority. */
			char jline[sizeof(msg) + 8];
			int jn = snprintf(jline, sizeof(jline), "<%d>%s\n", syslog_prio[level], msg);
			if (jn > (int)sizeof(jline) - 1)
				jn = (int)sizeof(jline) - 1;
			if (write(STDERR_FILENO, jline, (size_t)jn) < 0)
				errno = 0;
		} else if (stderr_too && level <= stderr_level && write(STDERR_FILENO, line, (size_t)n) < 0) {
			errno = 0; /* nowhere left to report it */
		}
		reopen_if_asked();
		if (log_fd >= 0 && write(log_fd, line, (size_t)n) < 0)
			errno = 0;
	}
}
