/* SPDX-License-Identifier: MIT */
/*
 * last_error: the sentence of the last failure of each profile directory
 * (<dev>/mig/<profile>/last_error and mig/<profile>/last_error), kept by
 * the node under a leaf lock, and the one place its key is spelled.
 */
#include "core/node_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void accel_last_error_key(char *buf, size_t len, const char *device, const char *profile)
{
	snprintf(buf, len, "%s/%s", device && device[0] ? device : "mig", profile);
}

void accel_node_set_last_error(struct accel_node *node, const char *key, const char *text)
{
	node_lock(&node->err_lock, NODE_LOCK_LEAF);
	for (size_t i = 0; i < node->n_errors; i++) {
		if (strcmp(node->errors[i].key, key))
			continue;
		snprintf(node->errors[i].text, sizeof(node->errors[i].text), "%s", text);
		node_unlock(&node->err_lock, NODE_LOCK_LEAF);
		return;
	}
	struct error_entry *grown = realloc(node->errors, (node->n_errors + 1) * sizeof(*grown));
	if (grown) {
		node->errors = grown;
		snprintf(grown[node->n_errors].key, sizeof(grown[node->n_errors].key), "%s", key);
		snprintf(grown[node->n_errors].text, sizeof(grown[node->n_errors].text), "%s", text);
		node->n_errors++;
	}
	node_unlock(&node->err_lock, NODE_LOCK_LEAF);
}

void accel_node_last_error(struct accel_node *node, const char *key, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	node_lock(&node->err_lock, NODE_LOCK_LEAF);
	for (size_t i = 0; i < node->n_errors; i++)
		if (!strcmp(node->errors[i].key, key))
			snprintf(buf, len, "%s", node->errors[i].text);
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
