/* SPDX-License-Identifier: MIT */
/*
 * last_error: the outcome of the last operation of each profile directory
 * (<dev>/mig/<profile>/last_error and mig/<profile>/last_error), kept by
 * the node under a leaf lock, and the one place its key is spelled.
 */
#include "core/engine/node_internal.h"
#include "core/model/utc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void accel_last_error_key(char *buf, size_t len, const char *device, const char *profile)
{
	snprintf(buf, len, "%s/%s", device && device[0] ? device : "mig", profile);
}

/*
 * One entry per directory key: the outcome of the last operation there.  A
 * failure's sentence, stamped with its time; a success clears it (docs/tree.md,
 * "last_error").  Read as "<UTC time with ms> <sentence>".
 */
void accel_node_set_last_error(struct accel_node *node, const char *key, const char *text)
{
	struct timespec now;
	struct error_entry *e = NULL;

	clock_gettime(CLOCK_REALTIME, &now);
	node_lock(&node->err_lock, NODE_LOCK_LEAF);
	for (size_t i = 0; i < node->n_errors && !e; i++)
		if (!strcmp(node->errors[i].key, key))
			e = &node->errors[i];
	if (!e && text[0]) {
		struct error_entry *grown = realloc(node->errors, (node->n_errors + 1) * sizeof(*grown));
		if (grown) {
			node->errors = grown;
			e = &grown[node->n_errors++];
			snprintf(e->key, sizeof(e->key), "%s", key);
		}
	}
	if (e) {
		snprintf(e->text, sizeof(e->text), "%s", text);
		e->when_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	}
	node_unlock(&node->err_lock, NODE_LOCK_LEAF);
	if (e)
		node_shown_moved(node);
}

void accel_node_drop_last_errors(struct accel_node *node, bool (*stale)(const char *text, void *ctx), void *ctx)
{
	bool dropped = false;

	node_lock(&node->err_lock, NODE_LOCK_LEAF);
	for (size_t i = 0; i < node->n_errors; i++)
		if (node->errors[i].text[0] && stale(node->errors[i].text, ctx)) {
			node->errors[i].text[0] = '\0';
			dropped = true;
		}
	node_unlock(&node->err_lock, NODE_LOCK_LEAF);
	if (dropped)
		node_shown_moved(node);
}

void accel_node_last_error(struct accel_node *node, const char *key, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	node_lock(&node->err_lock, NODE_LOCK_LEAF);
	for (size_t i = 0; i < node->n_errors; i++) {
		const struct error_entry *e = &node->errors[i];
		char when[ACCEL_UTC_MAX];

		if (strcmp(e->key, key) || !e->text[0])
			continue;
		accel_utc_ms(e->when_ms, when, sizeof(when));
		snprintf(buf, len, "%s %s", when, e->text);
	}
	node_unlock(&node->err_lock, NODE_LOCK_LEAF);
}

void accel_node_report(struct accel_node *node, const char *device, const char *profile, bool via_node, const char *why)
{
	char key[ACCEL_LAST_ERROR_KEY_MAX];

	accel_last_error_key(key, sizeof(key), device, profile);
	accel_node_set_last_error(node, key, why);
	if (via_node && device && device[0]) {
		accel_last_error_key(key, sizeof(key), NULL, profile);
		accel_node_set_last_error(node, key, why);
	}
}
