/* SPDX-License-Identifier: MIT */
/* What each card can take now, read from node.json for accelfs-slurm-sync (sync_cards.h). */
#include "sync_cards.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static void add_avail(struct node_cards *c, const char *profile, long n)
{
	for (size_t i = 0; i < c->navail; i++)
		if (!strcmp(c->avail[i].profile, profile)) {
			c->avail[i].available += n;
			return;
		}
	if (c->navail < AM_MAX_PROFILES && strlen(profile) < AM_NAME_MAX) {
		snprintf(c->avail[c->navail].profile, AM_NAME_MAX, "%s", profile);
		c->avail[c->navail++].available = n;
	}
}

/* Without admits (an accelfs from before it): absent, failed health, or a cordon. */
static void older_condition(const char *mount, json_t *dev, char *cond, size_t clen, char *why, size_t wlen)
{
	json_t *health = json_object_get(dev, "health");
	char path[4096], buf[16];
	cond[0] = why[0] = '\0';
	if (!strcmp(str(dev, "state"), "absent")) {
		snprintf(cond, clen, "absent");
		snprintf(why, wlen, "%s", str(dev, "refusal"));
	} else if (!strcmp(str(health, "state"), "failed")) {
		snprintf(cond, clen, "failed");
		snprintf(why, wlen, "%s", str(health, "why"));
	} else {
		snprintf(path, sizeof(path), "%s/%s/mig/cordon", mount, str(dev, "name"));
		if (am_read_file(path, buf, sizeof(buf)) > 0 && buf[0] == '1')
			snprintf(cond, clen, "cordoned");
	}
}

static void close_card(struct node_cards *c, const char *name, const char *cond, const char *why)
{
	if (c->nclosed == CARDS_MAX)
		return;
	struct card_closed *k = &c->closed[c->nclosed++];
	snprintf(k->name, sizeof(k->name), "%s", name);
	snprintf(k->condition, sizeof(k->condition), "%s", cond);
	snprintf(k->why, sizeof(k->why), "%s", why);
}

int cards_read(const char *mount, struct node_cards *out, char *err, size_t len)
{
	char path[4096];
	json_error_t jerr;
	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/node.json", mount);
	json_t *root = json_load_file(path, 0, &jerr);
	if (!root) {
		snprintf(err, len, "cannot read %s: %s", path, jerr.text);
		return -1;
	}
	/* Every profile the node publishes, so that one whose cards all take nothing reads 0. */
	size_t i;
	json_t *v, *devices = json_object_get(root, "devices");
	json_array_foreach(json_object_get(json_object_get(root, "mig"), "profiles"), i, v)
		add_avail(out, str(v, "name"), 0);
	if (!json_is_array(devices)) {
		snprintf(err, len, "%s has no devices array", path);
		json_decref(root);
		return -1;
	}
	json_array_foreach(devices, i, v)
	{
		json_t *admits = json_object_get(v, "admits"), *p;
		char cond[32], why[512];
		int takes;
		if (json_is_object(admits)) {
			takes = json_is_true(json_object_get(admits, "new_jobs"));
			snprintf(cond, sizeof(cond), "%s", str(admits, "condition"));
			snprintf(why, sizeof(why), "%s", str(admits, "why"));
		} else {
			older_condition(mount, v, cond, sizeof(cond), why, sizeof(why));
			takes = cond[0] == '\0';
		}
		if (!takes) {
			close_card(out, str(v, "name"), cond[0] ? cond : "closed", why);
			continue;
		}
		size_t k;
		json_array_foreach(json_object_get(v, "profiles"), k, p)
			add_avail(out, str(p, "name"), (long)json_integer_value(json_object_get(p, "available")));
	}
	json_decref(root);
	return 0;
}

void cards_comment(const struct node_cards *c, char *out, size_t len)
{
	size_t used = 0;
	out[0] = '\0';
	for (size_t i = 0; i < c->nclosed && used + 1 < len; i++) {
		const struct card_closed *k = &c->closed[i];
		int w = snprintf(out + used, len - used, "%s%s %s%s%s%s", i ? "; " : "accelfs: ", k->name, k->condition,
		                 k->why[0] ? " (" : "", k->why, k->why[0] ? ")" : "");
		if (w < 0)
			break;
		used += (size_t)w < len - used ? (size_t)w : len - used - 1;
	}
}
