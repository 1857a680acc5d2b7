/* SPDX-License-Identifier: MIT */
/*
 * accelfs's command line.  Everything that can be wrong with it is found
 * here, before the daemon creates a directory, loads a driver or forks:
 * a usage error costs nothing but its message and exit status 2.
 */
#ifndef ACCELFS_OPTIONS_H
#define ACCELFS_OPTIONS_H

#include <stdio.h>

#include <fuse_lowlevel.h>

struct fs_options {
	int foreground;
	int debug;
	int show_help;
	int show_version;
	int sim;
	int read_only;
	char *sim_topology;
	char *state_dir;
	char *cdi_dir;
	char *hook; /* --hook: the OCI hook program the CDI specs name */
	char *log_file;
	char *poll_interval;
	char *orphan_grace;
	char *foreign; /* --foreign: keep or reclaim */
	char *busy_retries;
	char *metrics_textfile; /* node_exporter's textfile directory (fs/textfile.c) */
	char *mountpoint;
	/* Parsed values; 0 where the option was not given (the node's default applies). */
	unsigned poll_ms;
	unsigned orphan_grace_ms;
	unsigned busy_retry_count;
};

#define FS_OPTIONS_GO_ON (-1)

/*
 * Parse and check the command line into o; what is left in args is for
 * FUSE (the program name and -o options).  Returns FS_OPTIONS_GO_ON, or the
 * status to exit with now: 0 after --help or --version, 2 after a usage
 * error (the message and the usage text on stderr).
 */
int fs_options_parse(struct fuse_args *args, struct fs_options *o);

void fs_options_usage(FILE *f, const char *prog);
/* After a usage error's own message: the usage line on stderr; returns 2. */
int fs_options_usage_error(const char *prog);
void fs_options_free(struct fs_options *o);

#endif
