/* SPDX-License-Identifier: MIT */
#include "core/driver/proc_life.h"

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/driver/proc_files.h"

/* The state letter of /proc/.../stat (R, S, D, Z, X, ...); 0 when it cannot be read. */
static char stat_state(const char *dir)
{
	char state = 0;

	return accel_proc_stat(dir, &state, NULL) ? 0 : state;
}

/* A mask line of /proc/.../status ("SigPnd:\t0000000000000100"), or a flag ("CoreDumping:\t1"). */
static uint64_t status_field(const char *dir, const char *key)
{
	char path[PATH_MAX], line[256];
	size_t klen = strlen(key);
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/status", dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoull(line + klen + 1, NULL, 16);
			break;
		}
	fclose(f);
	return v;
}

static void wchan(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/wchan", dir);
	buf[0] = '\0';
	f = fopen(path, "re");
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (!*buf || !strcmp(buf, "0"))
		snprintf(buf, len, "?");
}

#define SIGKILL_BIT (UINT64_C(1) << (9 - 1))

enum accel_proc_life accel_proc_life(const char *proc_root, pid_t pid, char *why, size_t len)
{
	char dir[PATH_MAX], tdir[PATH_MAX + 300], stuck[160] = "";
	bool killed = false;
	int threads = 0;
	char leader;
	DIR *d;

	snprintf(why, len, "running");
	if (pid <= 0)
		return ACCEL_PROC_GONE;
	snprintf(dir, sizeof(dir), "%s/%d", proc_root, (int)pid);
	leader = stat_state(dir);
	if (!leader) {
		snprintf(why, len, "gone");
		return ACCEL_PROC_GONE;
	}
	/* Every thread that is not a zombie yet, and whether a fatal signal has reached it. */
	snprintf(tdir, sizeof(tdir), "%s/task", dir);
	d = opendir(tdir);
	for (struct dirent *e; d && (e = readdir(d));) {
		char t[PATH_MAX + 600];
		char st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(t, sizeof(t), "%s/%s", tdir, e->d_name);
		st = stat_state(t);
		if (!st || st == 'Z' || st == 'X')
			continue;
		threads++;
		if (status_field(t, "SigPnd") & SIGKILL_BIT)
			killed = true;
		if (!*stuck) {
			char w[96];
			wchan(t, w, sizeof(w));
			snprintf(stuck, sizeof(stuck), "thread %s is in the kernel (state %c, waiting in %s)",
			         e->d_name, st, w);
		}
	}
	if (d)
		closedir(d);
	if (leader == 'Z' || leader == 'X') {
		if (!threads) {
			snprintf(why, len, "gone (a zombie not reaped yet)");
			return ACCEL_PROC_GONE;
		}
		snprintf(why, len, "dead: its main thread has exited; %s", stuck);
		return ACCEL_PROC_DEAD;
	}
	if (status_field(dir, "CoreDumping")) {
		snprintf(why, len, "dumping core; %s", *stuck ? stuck : "no thread found");
		return ACCEL_PROC_DYING;
	}
	if (killed || (status_field(dir, "ShdPnd") & SIGKILL_BIT)) {
		snprintf(why, len, "killed; %s", *stuck ? stuck : "no thread found");
		return ACCEL_PROC_DYING;
	}
	return ACCEL_PROC_ALIVE;
}
