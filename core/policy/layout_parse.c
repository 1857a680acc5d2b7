/* SPDX-License-Identifier: MIT */
/*
 * A layout's text (core/policy/layout.h): lines into declarations, declarations
 * back into the text reading shows, and the names of the layout's jobs.
 */
#include "core/policy/layout.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAYOUT_MAX_COUNT 64

static const char syntax[] = "write '<profile>', '<profile> x<count>', '<profile>@<start>', "
			     "'mode enabled', 'mode disabled' or 'drain', one a line";

/* A decimal number that is all of word, at most max: 0, or -1. */
static int number(const char *word, unsigned max, unsigned *out)
{
	unsigned long v = 0;

	if (!word[0])
		return -1;
	for (const char *c = word; *c; c++) {
		if (!isdigit((unsigned char)*c))
			return -1;
		v = v * 10 + (unsigned long)(*c - '0');
		if (v > max)
			return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* Profile names are the published directory names (the catalogue decides which exist): their bytes only. */
static int profile_word(const char *word, char *out, size_t len)
{
	if (!word[0] || strlen(word) >= len)
		return -1;
	for (const char *c = word; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("._+-", *c))
			return -1;
	snprintf(out, len, "%s", word);
	return 0;
}

/* Split a line into at most three words; -1 on a fourth. */
static int words(char *line, char *w[3])
{
	size_t n = 0;
	char *save = NULL;

	w[0] = w[1] = w[2] = NULL;
	for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		if (n == 3)
			return -1;
		w[n++] = t;
	}
	return (int)n;
}

static int parse_line(char *line, struct accel_layout *l, struct accel_layout_line *out, char *why, size_t whylen,
                      unsigned lineno)
{
	char *w[3], *at;
	int n = words(line, w);

	memset(out, 0, sizeof(*out));
	if (n < 0)
		goto bad;
	if (!strcmp(w[0], "mode")) {
		if (n != 2 || (strcmp(w[1], "enabled") && strcmp(w[1], "disabled")))
			goto bad;
		if (l->mode >= 0) {
			snprintf(why, whylen, "line %u: the mode is declared twice: keep one 'mode' line", lineno);
			return -EINVAL;
		}
		out->kind = ACCEL_LAYOUT_MODE;
		out->enabled = !strcmp(w[1], "enabled");
		l->mode = out->enabled;
		snprintf(out->text, sizeof(out->text), "mode %s", w[1]);
		return 0;
	}
	if (!strcmp(w[0], "drain")) {
		if (n != 1)
			goto bad;
		out->kind = ACCEL_LAYOUT_DRAIN;
		l->drain = true;
		snprintf(out->text, sizeof(out->text), "drain");
		return 0;
	}
	at = strchr(w[0], '@');
	if (at) {
		*at = '\0';
		if (n != 1 || profile_word(w[0], out->profile, sizeof(out->profile)) ||
		    number(at + 1, 1024, &out->start)) {
			snprintf(why, whylen,
			         "line %u: '%s@%s' is no '<profile>@<start>' (a profile directory's name, "
			         "'@', a placement's start as placements/ lists it)",
			         lineno, w[0], at + 1);
			return -EINVAL;
		}
		out->kind = ACCEL_LAYOUT_AT;
		out->count = 1;
		snprintf(out->text, sizeof(out->text), "%s@%u", w[0], out->start);
		return 0;
	}
	if (profile_word(w[0], out->profile, sizeof(out->profile)))
		goto bad;
	out->kind = ACCEL_LAYOUT_ANY;
	out->count = 1;
	if (n == 3 ||
	    (n == 2 && (w[1][0] != 'x' || number(w[1] + 1, LAYOUT_MAX_COUNT, &out->count) || out->count == 0))) {
		snprintf(why, whylen, "line %u: '%s' after %s is no count: write x<count>, 1 to %d", lineno,
		         n == 3 ? w[2] : w[1], out->profile, LAYOUT_MAX_COUNT);
		return -EINVAL;
	}
	if (out->count > 1)
		snprintf(out->text, sizeof(out->text), "%s x%u", w[0], out->count);
	else
		snprintf(out->text, sizeof(out->text), "%s", w[0]);
	return 0;
bad:
	snprintf(why, whylen, "line %u is not a layout line: %s", lineno, syntax);
	return -EINVAL;
}

int accel_layout_parse(const char *text, size_t len, struct accel_layout *out, char *why, size_t whylen)
{
	unsigned lineno = 0, units = 0;
	size_t pos = 0;

	memset(out, 0, sizeof(*out));
	out->mode = -1;
	if (len > ACCEL_LAYOUT_TEXT_MAX) {
		snprintf(why, whylen, "a layout is at most %d bytes", ACCEL_LAYOUT_TEXT_MAX);
		return -EINVAL;
	}
	while (pos < len) {
		char line[ACCEL_LAYOUT_TEXT_MAX + 1];
		size_t end = pos;
		int ret;

		while (end < len && text[end] != '\n')
			end++;
		lineno++;
		if (memchr(text + pos, '\0', end - pos)) {
			snprintf(why, whylen, "line %u holds a NUL byte: a layout is text", lineno);
			return -EINVAL;
		}
		memcpy(line, text + pos, end - pos);
		line[end - pos] = '\0';
		pos = end + 1;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		if (!line[strspn(line, " \t\r")])
			continue;
		if (out->n_lines == ACCEL_LAYOUT_MAX_LINES) {
			snprintf(why, whylen, "a layout has at most %d lines", ACCEL_LAYOUT_MAX_LINES);
			return -EINVAL;
		}
		ret = parse_line(line, out, &out->lines[out->n_lines], why, whylen, lineno);
		if (ret)
			return ret;
		units += out->lines[out->n_lines].count;
		if (units > ACCEL_LAYOUT_MAX_UNITS) {
			snprintf(why, whylen, "line %u: a layout declares at most %d instances", lineno,
			         ACCEL_LAYOUT_MAX_UNITS);
			return -EINVAL;
		}
		out->n_lines++;
	}
	return 0;
}

void accel_layout_format(const struct accel_layout *l, char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < l->n_lines && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s\n", l->lines[i].text);
		if (n < 0)
			return;
		used += (size_t)n;
	}
}

/* A profile name may hold what a job name may not ('+' of a variant): such a byte becomes '-'. */
void accel_layout_job_name(const char *device, const char *profile, unsigned start, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s-%s-%u", ACCEL_LAYOUT_JOB_PREFIX, device, profile, start);
	for (char *c = buf; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '.' && *c != '_' && *c != '-')
			*c = '-';
}

bool accel_layout_owns(const char *job)
{
	return !strncmp(job, ACCEL_LAYOUT_JOB_PREFIX, strlen(ACCEL_LAYOUT_JOB_PREFIX));
}
