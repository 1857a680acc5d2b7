/* SPDX-License-Identifier: MIT */
#include "core/driver/mountinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* /proc/self/mountinfo writes space, tab, newline and backslash as \ooo: undo it in place. */
static void unescape_octal(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' &&
		    s[3] <= '7') {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/*
 * The last matching line is the topmost mount: the kernel lists mounts in
 * the order they were made.  A line reads
 *   id parent major:minor root mountpoint options ... - type source superoptions
 */
bool accel_mount_at(const char *path, struct accel_mount_entry *out)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	memset(out, 0, sizeof(*out));
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		char *save = NULL, *field[5], *tok, *sep;
		unsigned ma, mi;
		int n = 0;

		sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = '\0';
		for (tok = strtok_r(line, " ", &save); tok && n < 5; tok = strtok_r(NULL, " ", &save))
			field[n++] = tok;
		if (n < 5 || sscanf(field[2], "%u:%u", &ma, &mi) != 2)
			continue;
		unescape_octal(field[4]);
		if (strcmp(field[4], path))
			continue;
		tok = strtok_r(sep + 3, " \n", &save);
		snprintf(out->type, sizeof(out->type), "%s", tok ? tok : "");
		tok = tok ? strtok_r(NULL, " \n", &save) : NULL; /* the source */
		tok = tok ? strtok_r(NULL, " \n", &save) : NULL;
		snprintf(out->options, sizeof(out->options), "%s", tok ? tok : "");
		out->dev_major = ma;
		out->dev_minor = mi;
		found = true;
	}
	free(line);
	fclose(f);
	return found;
}

unsigned accel_mount_fuse_conn(const struct accel_mount_entry *m)
{
	/* The kernel's own encoding (MKDEV: 12 bits of major above 20 of minor), not glibc's. */
	return m->dev_major << 20 | m->dev_minor;
}
