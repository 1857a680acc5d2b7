/* SPDX-License-Identifier: MIT */
/* Slurm GRES strings for accelfs-slurm-sync (sync_gres.h). */
#include "sync_gres.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long gres_get(const struct gres_set *s, const char *type)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->mig[i].type, type))
			return s->mig[i].count;
	return 0;
}

int gres_has(const struct gres_set *s, const char *type)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->mig[i].type, type))
			return 1;
	return 0;
}

void gres_put(struct gres_set *s, const char *type, long count)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->mig[i].type, type)) {
			s->mig[i].count = count;
			return;
		}
	if (s->n < AM_MAX_PROFILES) {
		snprintf(s->mig[s->n].type, sizeof(s->mig[s->n].type), "%s", type);
		s->mig[s->n++].count = count;
	}
}

/* Split on commas outside parentheses: "(IDX:0,2)" is one item's detail. */
static char *next_item(char **cursor)
{
	char *start = *cursor;
	if (!start || !*start)
		return NULL;
	int depth = 0;
	char *p = start;
	for (; *p; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth)
			depth--;
		else if (*p == ',' && !depth)
			break;
	}
	if (*p) {
		*p = '\0';
		*cursor = p + 1;
	} else {
		*cursor = p;
	}
	return start;
}

static int parse_count(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -1;
	*out = v;
	return 0;
}

/* "mig:<type>:<n>" or "mig:<type>" (the prefix already stripped by the caller). */
static int parse_mig(char *item, struct gres_set *out)
{
	char *colon = strchr(item, ':');
	long count = 1;
	if (colon) {
		*colon = '\0';
		if (parse_count(colon + 1, &count) < 0)
			return -1;
	}
	if (!*item || strlen(item) >= AM_NAME_MAX)
		return -1;
	gres_put(out, item, gres_get(out, item) + count);
	return 0;
}

int gres_parse(const char *text, struct gres_set *out)
{
	char buf[4096];
	memset(out, 0, sizeof(*out));
	if (!text || !*text || !strcmp(text, "(null)"))
		return 0;
	if (strlen(text) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", text);
	char *cursor = buf, *item;
	size_t olen = 0;
	while ((item = next_item(&cursor))) {
		item[strcspn(item, "(")] = '\0';
		if (!*item)
			continue;
		if (!strncmp(item, "mig:", 4)) {
			if (parse_mig(item + 4, out) < 0)
				return -1;
		} else if (strcmp(item, "mig") != 0) {
			int w = snprintf(out->other + olen, sizeof(out->other) - olen, "%s%s", olen ? "," : "", item);
			if (w < 0 || (size_t)w >= sizeof(out->other) - olen)
				return -1;
			olen += (size_t)w;
		}
	}
	return 0;
}

int gres_parse_request(const char *tres_per_node, struct gres_set *out)
{
	char buf[4096];
	memset(out, 0, sizeof(*out));
	if (!tres_per_node || !*tres_per_node)
		return 0;
	if (strlen(tres_per_node) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", tres_per_node);
	char *save = NULL;
	for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		if (!strncmp(item, "gres:", 5))
			item += 5;
		if (!strncmp(item, "mig:", 4) && parse_mig(item + 4, out) < 0)
			return -1;
		/* "gres:mig:2" without a type asks for any profile: it matches no count here. */
	}
	return 0;
}

static int cmp_count(const void *a, const void *b)
{
	return strcmp(((const struct gres_count *)a)->type, ((const struct gres_count *)b)->type);
}

void gres_format(const struct gres_set *s, char *out, size_t len)
{
	struct gres_count sorted[AM_MAX_PROFILES];
	memcpy(sorted, s->mig, s->n * sizeof(sorted[0]));
	qsort(sorted, s->n, sizeof(sorted[0]), cmp_count);
	size_t used = (size_t)snprintf(out, len, "%s", s->other);
	for (size_t i = 0; i < s->n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%smig:%s:%ld", used ? "," : "", sorted[i].type,
		                         sorted[i].count);
}

int gres_equal(const struct gres_set *a, const struct gres_set *b)
{
	if (strcmp(a->other, b->other))
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (gres_get(b, a->mig[i].type) != a->mig[i].count)
			return 0;
	for (size_t i = 0; i < b->n; i++)
		if (gres_get(a, b->mig[i].type) != b->mig[i].count)
			return 0;
	return 1;
}
