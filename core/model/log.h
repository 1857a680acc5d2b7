/* SPDX-License-Identifier: MIT */
/*
 * One logging path for the library, the daemon and the tools.  Messages go
 * to stderr (and to syslog once the daemon has detached), prefixed with the
 * level; the caller supplies the device/profile context in the text so that
 * every line can be read on its own.  When stderr is systemd's journal
 * (JOURNAL_STREAM names it), a line is "<priority>message" instead: the
 * journal keeps the priority (journalctl -p warning) and adds the time.
 */
#ifndef ACCEL_LOG_H
#define ACCEL_LOG_H

#include <stdbool.h>

enum accel_log_level {
	ACCEL_LOG_ERROR = 0,
	ACCEL_LOG_WARN = 1,
	/* What a user's own command met (no room, a name taken, a job in use): normal, but worth a line. */
	ACCEL_LOG_NOTICE = 2,
	ACCEL_LOG_INFO = 3,
	ACCEL_LOG_DEBUG = 4,
};

/*
 * The level ACCELFS_LOG names (error, warning, notice, info, debug; any
 * case): 0, or -EINVAL when it names none (*level is left alone).  Unset or
 * empty: 0 and INFO.  A bad value is said once on stderr by the first
 * message and otherwise ignored; the daemon refuses it (fs/options.c).
 */
int accel_log_level_from_env(enum accel_log_level *level);

/* Messages above this level are dropped (default INFO; ACCELFS_LOG names another). */
void accel_log_set_level(enum accel_log_level level);
enum accel_log_level accel_log_get_level(void);
/* Messages above this level are kept off stderr (a daemon about to detach shows only problems). */
void accel_log_set_stderr_level(enum accel_log_level level);
/* Send messages to syslog as well as (or, when detached, instead of) stderr. */
void accel_log_use_syslog(bool on, bool also_stderr);
/* An optional file that receives every message too (the daemon's --log). */
int accel_log_open_file(const char *path);
/*
 * Log rotation: the next message reopens that file by its path (a renamed
 * file stops receiving lines, a new one is created).  Only sets a flag, so
 * it may be called from a signal handler (the daemon's SIGHUP).
 */
void accel_log_reopen(void);

void accel_log(enum accel_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) accel_log(ACCEL_LOG_ERROR, __VA_ARGS__)
#define log_warn(...) accel_log(ACCEL_LOG_WARN, __VA_ARGS__)
#define log_notice(...) accel_log(ACCEL_LOG_NOTICE, __VA_ARGS__)
#define log_info(...) accel_log(ACCEL_LOG_INFO, __VA_ARGS__)
#define log_debug(...) accel_log(ACCEL_LOG_DEBUG, __VA_ARGS__)

#endif
