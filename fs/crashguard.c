/* SPDX-License-Identifier: MIT */
#include "fs/crashguard.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fs/fusectl.h"
#include "fs/metrics_text.h"
#include "core/driver/mountinfo.h"
#include "fs/textfile.h"

/*
 * Process-wide by nature: a signal handler can reach nothing else.  Set
 * once by fs_crashguard_arm before any handler is installed.
 */
static int abort_fd = -1;
static struct sigaction previous[NSIG];

/*
 * The daemon's end of a pipe to the guardian: a byte on it before the
 * daemon ends says it stopped (fs_crashguard_stopping), and its absence
 * that it died.  What the guardian writes then is prepared before the fork:
 * it may call nothing that is not async-signal-safe.
 */
static int stopping_fd = -1;
static char log_path[PATH_MAX], textfile_path[PATH_MAX], textfile_tmp[PATH_MAX + 16];
static char down_text[1024]; /* the textfile of a dead daemon, but for the time of death */

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

/* ---- what the guardian writes: async-signal-safe, no stdio --------------------------------------- */

static size_t put_str(char *buf, size_t at, size_t len, const char *s)
{
	while (*s && at + 1 < len)
		buf[at++] = *s++;
	buf[at] = '\0';
	return at;
}

static size_t put_uint(char *buf, size_t at, size_t len, unsigned long long v, int width)
{
	char digits[24];
	int n = 0;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && n < (int)sizeof(digits));
	while (n < width && n < (int)sizeof(digits))
		digits[n++] = '0';
	while (n > 0 && at + 1 < len)
		buf[at++] = digits[--n];
	buf[at] = '\0';
	return at;
}

/* now as the log writes it, 2026-12-04T18:40:00.123Z: days to a civil date (proleptic Gregorian). */
static size_t put_time(char *buf, size_t at, size_t len, const struct timespec *now)
{
	long long days = now->tv_sec / 86400, secs = now->tv_sec % 86400;
	long long z = days + 719468, era = z / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
	long long y = (long long)yoe + era * 400 + (m <= 2);

	at = put_uint(buf, at, len, (unsigned long long)y, 4);
	at = put_str(buf, at, len, "-");
	at = put_uint(buf, at, len, m, 2);
	at = put_str(buf, at, len, "-");
	at = put_uint(buf, at, len, d, 2);
	at = put_str(buf, at, len, "T");
	at = put_uint(buf, at, len, (unsigned long long)(secs / 3600), 2);
	at = put_str(buf, at, len, ":");
	at = put_uint(buf, at, len, (unsigned long long)(secs / 60 % 60), 2);
	at = put_str(buf, at, len, ":");
	at = put_uint(buf, at, len, (unsigned long long)(secs % 60), 2);
	at = put_str(buf, at, len, ".");
	at = put_uint(buf, at, len, (unsigned long long)(now->tv_nsec / 1000000), 3);
	return put_str(buf, at, len, "Z");
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/*
 * The daemon died without stopping: its textfile, if it left one, becomes
 * accelfs_up 0 and the time of death (replaced whole, as the writer does),
 * and its log says so.  Returns whether the textfile was marked.
 */
static bool report_death(pid_t daemon)
{
	char text[sizeof(down_text) + 64], line[512];
	struct timespec now;
	bool marked = false;
	size_t at;
	int fd;

	clock_gettime(CLOCK_REALTIME, &now);
	if (*textfile_path && access(textfile_path, F_OK) == 0) {
		at = put_str(text, 0, sizeof(text), down_text);
		at = put_uint(text, at, sizeof(text), (unsigned long long)now.tv_sec, 1);
		at = put_str(text, at, sizeof(text), ".");
		at = put_uint(text, at, sizeof(text), (unsigned long long)(now.tv_nsec / 1000000), 3);
		at = put_str(text, at, sizeof(text), "\n");
		fd = open(textfile_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd >= 0) {
			write_all(fd, text, at);
			marked = close(fd) == 0 && rename(textfile_tmp, textfile_path) == 0;
			if (!marked)
				unlink(textfile_tmp);
		}
	}
	if (!*log_path)
		return marked;
	at = put_time(line, 0, sizeof(line), &now);
	at = put_str(line, at, sizeof(line), " accelfs-guard[");
	at = put_uint(line, at, sizeof(line), (unsigned long long)getpid(), 1);
	at = put_str(line, at, sizeof(line), "] error: accelfs pid ");
	at = put_uint(line, at, sizeof(line), (unsigned long long)daemon, 1);
	at = put_str(line, at, sizeof(line),
	             " died without stopping (SIGKILL, the OOM killer or a crash: the kernel log and a core dump "
	             "say which); its mount's connection is aborted");
	at = put_str(line, at, sizeof(line), marked ? ", its metrics textfile says accelfs_up 0\n" : "\n");
	fd = open(log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		write_all(fd, line, at);
		close(fd);
	}
	return marked;
}

/* Until every thread of the daemon is gone (then the guardian has another parent), for a bounded time. */
static void wait_for_the_whole_daemon(pid_t daemon)
{
	struct timespec step = { 0, 10 * 1000000L };

	for (int i = 0; i < 1000 && getppid() == daemon; i++)
		nanosleep(&step, NULL);
}

/*
 * The guardian, in the forked child: only async-signal-safe calls (the
 * parent has threads).  It holds no descriptor but the abort file and its
 * end of the stopping pipe: not /dev/fuse (the kernel would never see the
 * daemon's last close), not the state lock (a successor would be refused).
 */
static void guardian(pid_t daemon, int fd, int stopped_fd)
{
	sigset_t wake;
	siginfo_t info;
	char byte;

	/* Above anything they could collide with, then down to 3 and 4. */
	fd = fcntl(fd, F_DUPFD, 64);
	stopped_fd = fcntl(stopped_fd, F_DUPFD, 64);
	if (fd < 0 || stopped_fd < 0 || dup2(fd, 3) != 3 || dup2(stopped_fd, 4) != 4)
		_exit(1);
	fd = 3;
	stopped_fd = 4;
	syscall(SYS_close_range, 5, ~0U, 0);
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
	/* Stopped, or died?  The byte is written before the main thread ends; otherwise EOF or nothing. */
	fcntl(stopped_fd, F_SETFL, O_NONBLOCK);
	if (read(stopped_fd, &byte, 1) != 1) {
		wait_for_the_whole_daemon(daemon); /* no thread of it may write the textfile after us */
		report_death(daemon);
	}
	/* No exit handlers, no leak report of a copy of the daemon's heap (valgrind, LeakSanitizer). */
	kill(getpid(), SIGKILL);
	_exit(0);
}

static int fork_guardian(int fd, char *err, size_t len)
{
	sigset_t all, old;
	pid_t daemon = getpid(), pid;
	int pipe_fds[2];

	if (pipe2(pipe_fds, O_CLOEXEC)) {
		snprintf(err, len, "cannot start the process that aborts the mount's connection if accelfs dies: %s",
		         strerror(errno));
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pid = fork();
	if (pid == 0)
		guardian(daemon, fd, pipe_fds[0]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(pipe_fds[0]);
	if (pid < 0)
		close(pipe_fds[1]);
	else
		stopping_fd = pipe_fds[1];
	if (pid < 0) {
		snprintf(err, len, "cannot start the process that aborts the mount's connection if accelfs dies: %s",
		         strerror(errno));
		return -1;
	}
	return 0;
}

/* What the guardian writes if the daemon dies, made now: it may not call snprintf then. */
static void prepare_reports(const struct fs_crashguard_files *files)
{
	*log_path = *textfile_path = '\0';
	if (files && files->log)
		snprintf(log_path, sizeof(log_path), "%s", files->log);
	if (!files || !files->textfile_dir)
		return;
	if (snprintf(textfile_path, sizeof(textfile_path), "%s/%s", files->textfile_dir, FS_TEXTFILE_NAME) >=
	    (int)sizeof(textfile_path)) {
		*textfile_path = '\0'; /* the writer refuses that path too */
		return;
	}
	/* Not *.prom: the collector never reads it half-written. */
	snprintf(textfile_tmp, sizeof(textfile_tmp), "%s/.%s.down", files->textfile_dir, FS_TEXTFILE_NAME);
	snprintf(down_text, sizeof(down_text),
	         "# HELP accelfs_up %s\n# TYPE accelfs_up gauge\naccelfs_up 0\n# HELP %s %s\n# TYPE %s gauge\n%s ",
	         FS_METRICS_UP_HELP, FS_TEXTFILE_WRITE_TIME, FS_TEXTFILE_WRITE_TIME_HELP, FS_TEXTFILE_WRITE_TIME,
	         FS_TEXTFILE_WRITE_TIME);
}

void fs_crashguard_stopping(void)
{
	if (stopping_fd >= 0 && write(stopping_fd, "s", 1) != 1) {
		/* the guardian then takes a stop for a death: the worst is a needless accelfs_up 0 */
	}
}

int fs_crashguard_arm(const char *mountpoint, const struct fs_crashguard_files *files, unsigned *conn, char *err,
                      size_t len)
{
	struct accel_mount_entry m;
	int fd;

	*conn = 0;
	prepare_reports(files);
	if (!accel_mount_at(mountpoint, &m) || strncmp(m.type, "fuse", 4)) {
		snprintf(err, len,
		         "the new mount on %s is not in /proc/self/mountinfo: cannot find its FUSE connection",
		         mountpoint);
		return -1;
	}
	*conn = accel_mount_fuse_conn(&m);
	fd = fs_fusectl_open_abort(*conn, err, len);
	if (fd < 0)
		return -1;
	abort_fd = fd;
	install_handlers();
	return fork_guardian(fd, err, len);
}
