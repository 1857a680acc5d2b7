/* SPDX-License-Identifier: MIT */
#include "usage_record.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mig_jobs.h"

void am_usage_prime(const char *mount)
{
	static char buf[1 << 16]; /* what it says does not matter: reading it is what samples */
	char path[4096];

	snprintf(path, sizeof(path), "%s/node.json", mount);
	(void)am_read_file(path, buf, sizeof(buf));
}

/* The value of "key: value" in text, its first word ("unknown" when the file says so or lacks it). */
static void value_of(const char *text, const char *key, char *out, size_t len)
{
	size_t k = strlen(key);

	snprintf(out, len, "unknown");
	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, k) || line[k] != ':' || line[k + 1] != ' ')
			continue;
		line += k + 2;
		if (!strncmp(line, "unknown", 7))
			return;
		snprintf(out, len, "%.*s", (int)strcspn(line, " \n"), line);
		return;
	}
}

int am_usage_record(const char *mount, uint32_t jobid, const char *node, char *out, size_t len)
{
	struct am_part parts[AM_MAX_PER_JOB];
	char err[512], path[4096], text[8192];
	size_t n = 0, used = 0;
	int described = 0;

	out[0] = '\0';
	if (am_list(mount, jobid, 0, parts, AM_MAX_PER_JOB, &n, err, sizeof(err)) < 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char mean[32], peak[32], mem[32], energy[32];
		int w;

		/* The node-level view: every partition of the job is there, whichever device it is on. */
		snprintf(path, sizeof(path), "%s/mig/%s/%s/utilization", mount, parts[i].profile, parts[i].name);
		if (am_read_file(path, text, sizeof(text)) < 0)
			continue;
		value_of(text, "sm_activity_mean_percent", mean, sizeof(mean));
		value_of(text, "sm_activity_peak_percent", peak, sizeof(peak));
		value_of(text, "memory_used_peak_bytes", mem, sizeof(mem));
		value_of(text, "energy_estimate_joules", energy, sizeof(energy));
		w = snprintf(
			out + used, len - used, "%s%s/%s sm_mean=%s%s sm_peak=%s%s mem_peak=%s energy_estimate=%s%s",
			used ? "; " : AM_USAGE_MARK, node, parts[i].name, mean, strcmp(mean, "unknown") ? "%" : "",
			peak, strcmp(peak, "unknown") ? "%" : "", mem, energy, strcmp(energy, "unknown") ? "J" : "");
		if (w < 0 || (size_t)w >= len - used) {
			out[used] = '\0';
			break;
		}
		used += (size_t)w;
		described++;
	}
	return described;
}

/* Append n bytes of s to out (used so far *used); false when they do not fit with the NUL. */
static bool put(char *out, size_t len, size_t *used, const char *s, size_t n)
{
	if (*used + n >= len)
		return false;
	memcpy(out + *used, s, n);
	*used += n;
	out[*used] = '\0';
	return true;
}

int am_usage_merge(const char *old, const char *node, const char *mine, char *out, size_t len)
{
	const char *mark = old ? strstr(old, AM_USAGE_MARK) : NULL;
	const char *m = !strncmp(mine, AM_USAGE_MARK, strlen(AM_USAGE_MARK)) ? mine + strlen(AM_USAGE_MARK) : "";
	size_t used = 0, before, nl = strlen(node);
	bool ok = true, first = true;

	out[0] = '\0';
	/* Whatever came before the record, as it was (its "; " separator written again below). */
	before = mark ? (size_t)(mark - old) : old ? strlen(old) : 0;
	while (before && (old[before - 1] == ' ' || old[before - 1] == ';'))
		before--;
	if (before)
		ok = put(out, len, &used, old, before) && put(out, len, &used, "; ", 2);
	ok = ok && put(out, len, &used, AM_USAGE_MARK, strlen(AM_USAGE_MARK));
	/* The other nodes' entries ("NODE/NAME ..." up to "; "), then this node's new ones. */
	for (const char *e = mark ? mark + strlen(AM_USAGE_MARK) : NULL; ok && e && *e;) {
		const char *end = strstr(e, "; ");
		size_t n = end ? (size_t)(end - e) : strlen(e);

		if (n && !(n > nl && !strncmp(e, node, nl) && e[nl] == '/')) {
			ok = (first || put(out, len, &used, "; ", 2)) && put(out, len, &used, e, n);
			first = false;
		}
		e = end ? end + 2 : NULL;
	}
	if (ok && *m)
		ok = (first || put(out, len, &used, "; ", 2)) && put(out, len, &used, m, strlen(m));
	if (!ok) {
		snprintf(out, len, "%s", mine);
		return -1;
	}
	return 0;
}
