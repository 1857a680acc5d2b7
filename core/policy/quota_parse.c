/* SPDX-License-Identifier: MIT */
/*
 * The text of /accel/quota: parsed whole before anything changes, and the
 * form the state directory keeps.  Pure, but for the name lookups of a
 * user's write (getpwnam, getgrnam), which happen here once so that the
 * table, and what it charges, never depends on the name service again.
 */
#include "core/policy/quota.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/names.h"

void accel_quota_table_free(struct accel_quota_table *t)
{
	free(t->entries);
	t->entries = NULL;
	t->n = 0;
}

int accel_quota_table_copy(struct accel_quota_table *dst, const struct accel_quota_table *src)
{
	dst->entries = NULL;
	dst->n = 0;
	if (!src->n)
		return 0;
	dst->entries = malloc(src->n * sizeof(*dst->entries));
	if (!dst->entries)
		return -ENOMEM;
	memcpy(dst->entries, src->entries, src->n * sizeof(*dst->entries));
	dst->n = src->n;
	return 0;
}

void accel_quota_principal(const struct accel_quota_entry *e, char *buf, size_t len)
{
	if (e->kind == ACCEL_QUOTA_DEFAULT)
		snprintf(buf, len, "default");
	else
		snprintf(buf, len, "%s:%s", e->kind == ACCEL_QUOTA_USER ? "user" : "group", e->label);
}

static int refuse(char *why, size_t whylen, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int l = snprintf(why, whylen, "quota line %u: ", line);

	va_start(ap, fmt);
	if (l > 0 && (size_t)l < whylen)
		vsnprintf(why + l, whylen - (size_t)l, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* A decimal number with no sign, no leading zero, at most max; false otherwise. */
static bool decimal(const char *s, unsigned long max, unsigned long *out)
{
	unsigned long v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > max)
			return false;
	}
	*out = v;
	return true;
}

/* A user or group as written: a number, or a name the name service knows (unless stored). */
static int principal(struct accel_quota_entry *e, const char *word, bool stored, unsigned line, char *why,
                     size_t whylen)
{
	bool user = !strncmp(word, "user:", 5);
	const char *who = word + (user ? 5 : 6);
	const char *kind = user ? "user" : "group";
	unsigned long id;
	char name[64];
	const char *eq = stored ? strchr(who, '=') : NULL;

	e->kind = user ? ACCEL_QUOTA_USER : ACCEL_QUOTA_GROUP;
	if (!*who)
		return refuse(why, whylen, line, "'%s' names no %s: write %s:<name> or %s:<number>", word, kind, kind,
		              kind);
	if (strlen(who) >= sizeof(name))
		return refuse(why, whylen, line, "the %s name '%.40s...' is longer than 63 bytes", kind, who);
	snprintf(name, sizeof(name), "%.*s", eq ? (int)(eq - who) : (int)strlen(who), who);
	if (decimal(name, 4294967294UL, &id)) {
		e->id = (unsigned)id;
		snprintf(e->label, sizeof(e->label), "%s", eq && eq[1] ? eq + 1 : name);
		return 0;
	}
	if (stored)
		return refuse(why, whylen, line, "'%s' is not %s:<number>", word, kind);
	if (user) {
		struct passwd pw, *res = NULL;
		char buf[4096];
		if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) || !res)
			return refuse(why, whylen, line,
			              "no user '%s' on this node: write user:<uid> for a user the "
			              "name service does not know",
			              name);
		e->id = (unsigned)pw.pw_uid;
	} else {
		struct group gr, *res = NULL;
		char buf[4096];
		if (getgrnam_r(name, &gr, buf, sizeof(buf), &res) || !res)
			return refuse(why, whylen, line,
			              "no group '%s' on this node: write group:<gid> for a group the "
			              "name service does not know",
			              name);
		e->id = (unsigned)gr.gr_gid;
	}
	snprintf(e->label, sizeof(e->label), "%s", name);
	return 0;
}

/* One `key=<n>`: slices, jobs or a profile's published name. */
static int limit(struct accel_quota_entry *e, char *word, unsigned line, char *why, size_t whylen)
{
	char *eq = strchr(word, '=');
	unsigned long n;

	if (!eq || eq == word)
		return refuse(why, whylen, line, "'%.64s' is not a limit: write slices=<n>, jobs=<n> or <profile>=<n>",
		              word);
	*eq = '\0';
	if (!decimal(eq + 1, ACCEL_QUOTA_MAX, &n))
		return refuse(why, whylen, line, "'%.64s=%.32s': a limit is a number from 0 to %lu", word, eq + 1,
		              ACCEL_QUOTA_MAX);
	if (!strcmp(word, "slices") || !strcmp(word, "jobs")) {
		bool slices = word[0] == 's';
		if (slices ? e->has_slices : e->has_jobs)
			return refuse(why, whylen, line, "%s is given twice", word);
		*(slices ? &e->has_slices : &e->has_jobs) = true;
		*(slices ? &e->slices : &e->jobs) = n;
		return 0;
	}
	if (strlen(word) >= ACCEL_NAME_MAX || !accel_name_is_segment(word))
		return refuse(why, whylen, line,
		              "'%.64s' is neither slices, jobs nor a profile name (a directory of /accel/mig, 4g.48gb)",
		              word);
	for (size_t i = 0; i < e->n_profiles; i++)
		if (!strcmp(e->profiles[i].profile, word))
			return refuse(why, whylen, line, "%s is given twice", word);
	if (e->n_profiles == ACCEL_QUOTA_PROFILES)
		return refuse(why, whylen, line, "more than %d profile limits on one line", ACCEL_QUOTA_PROFILES);
	snprintf(e->profiles[e->n_profiles].profile, ACCEL_NAME_MAX, "%s", word);
	e->profiles[e->n_profiles++].n = n;
	return 0;
}

static bool same_principal(const struct accel_quota_entry *a, const struct accel_quota_entry *b)
{
	return a->kind == b->kind && (a->kind == ACCEL_QUOTA_DEFAULT || a->id == b->id);
}

static int parse_line(char *s, bool stored, unsigned line, struct accel_quota_entry *e, char *why, size_t whylen)
{
	char *save = NULL, *word = strtok_r(s, " \t", &save);
	int ret = 0;

	memset(e, 0, sizeof(*e));
	if (!strcmp(word, "default"))
		e->kind = ACCEL_QUOTA_DEFAULT;
	else if (!strncmp(word, "user:", 5) || !strncmp(word, "group:", 6))
		ret = principal(e, word, stored, line, why, whylen);
	else
		return refuse(why, whylen, line,
		              "'%.64s' is not a principal: a line starts with user:<name|uid>, group:<name|gid> or "
		              "default",
		              word);
	if (ret)
		return ret;
	word = strtok_r(NULL, " \t", &save);
	if (!word)
		return refuse(why, whylen, line,
		              "no limit after the principal: give slices=<n>, jobs=<n> and/or "
		              "<profile>=<n>");
	for (; word; word = strtok_r(NULL, " \t", &save)) {
		ret = limit(e, word, line, why, whylen);
		if (ret)
			return ret;
	}
	return 0;
}

int accel_quota_parse(const char *text, bool stored, struct accel_quota_table *out, char *why, size_t whylen)
{
	struct accel_quota_table t = { 0 };
	size_t len = strlen(text);
	char *copy, *next;
	unsigned line = 0;
	int ret = 0;

	out->entries = NULL;
	out->n = 0;
	if (len > ACCEL_QUOTA_TEXT_MAX) {
		snprintf(why, whylen, "the quota text is %zu bytes, more than %d: write it in one piece, shorter", len,
		         ACCEL_QUOTA_TEXT_MAX);
		return -EINVAL;
	}
	if (memchr(text, '\0', len) != NULL || strchr(text, '\r')) {
		snprintf(why, whylen, "the quota text holds a carriage return: write lines ended by \\n");
		return -EINVAL;
	}
	copy = strdup(text);
	if (!copy)
		return -ENOMEM;
	for (char *s = copy; s && !ret; s = next) {
		struct accel_quota_entry e, *grown;

		next = strchr(s, '\n');
		if (next)
			*next++ = '\0';
		line++;
		s += strspn(s, " \t");
		if (!*s || *s == '#')
			continue;
		ret = parse_line(s, stored, line, &e, why, whylen);
		for (size_t i = 0; !ret && i < t.n; i++)
			if (same_principal(&t.entries[i], &e)) {
				char p[80];
				accel_quota_principal(&e, p, sizeof(p));
				ret = refuse(why, whylen, line,
				             "%s has a line already: give all its limits on one line", p);
			}
		if (!ret && t.n == ACCEL_QUOTA_PRINCIPALS)
			ret = refuse(why, whylen, line, "more than %d principals", ACCEL_QUOTA_PRINCIPALS);
		if (ret)
			break;
		grown = realloc(t.entries, (t.n + 1) * sizeof(*grown));
		if (!grown) {
			ret = -ENOMEM;
			snprintf(why, whylen, "out of memory");
			break;
		}
		t.entries = grown;
		t.entries[t.n++] = e;
	}
	free(copy);
	if (ret)
		accel_quota_table_free(&t);
	else
		*out = t;
	return ret;
}

char *accel_quota_format(const struct accel_quota_table *t)
{
	size_t cap = 64 + t->n * (96 + ACCEL_QUOTA_PROFILES * (ACCEL_NAME_MAX + 12)), len = 0;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	buf[0] = '\0';
	for (size_t i = 0; i < t->n; i++) {
		const struct accel_quota_entry *e = &t->entries[i];

		if (e->kind == ACCEL_QUOTA_DEFAULT)
			len += (size_t)snprintf(buf + len, cap - len, "default");
		else
			len += (size_t)snprintf(buf + len, cap - len, "%s:%u=%s",
			                        e->kind == ACCEL_QUOTA_USER ? "user" : "group", e->id, e->label);
		if (e->has_slices)
			len += (size_t)snprintf(buf + len, cap - len, " slices=%lu", e->slices);
		for (size_t k = 0; k < e->n_profiles; k++)
			len += (size_t)snprintf(buf + len, cap - len, " %s=%lu", e->profiles[k].profile,
			                        e->profiles[k].n);
		if (e->has_jobs)
			len += (size_t)snprintf(buf + len, cap - len, " jobs=%lu", e->jobs);
		len += (size_t)snprintf(buf + len, cap - len, "\n");
	}
	return buf;
}
