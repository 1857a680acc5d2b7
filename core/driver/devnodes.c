/* SPDX-License-Identifier: MIT */
#include "core/driver/devnodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

int accel_caps_dir(const struct accel_card *card, char *buf, size_t len)
{
	const struct accel_family *f = card->family;

	return snprintf(buf, len, "%s/%s%u/mig", card->proc_root, f->caps_dir_prefix,
	                f->caps_by_minor ? card->minor : card->ordinal) >= (int)len
	               ? -ENAMETOOLONG
	               : 0;
}

int accel_cap_minor(const struct accel_card *card, unsigned gi, int ci, unsigned *minor, char *why, size_t whylen)
{
	char dir[512], path[600], line[128];
	bool found = false;
	FILE *f;

	if (accel_caps_dir(card, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	if (ci < 0)
		snprintf(path, sizeof(path), "%s/gi%u/access", dir, gi);
	else
		snprintf(path, sizeof(path), "%s/gi%u/ci%d/access", dir, gi, ci);
	f = fopen(path, "re");
	if (!f) {
		int err = errno;
		snprintf(why, whylen, "capability record %s: %s", path, strerror(err));
		return -err;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long v;
		char *end;

		if (strncmp(line, "DeviceFileMinor:", 16))
			continue;
		errno = 0;
		v = strtoul(line + 16, &end, 10);
		while (*end == ' ' || *end == '\t' || *end == '\n')
			end++;
		if (errno || end == line + 16 || *end || v > 0xfffff)
			break;
		*minor = (unsigned)v;
		found = true;
		break;
	}
	fclose(f);
	if (!found) {
		snprintf(why, whylen, "capability record %s has no valid DeviceFileMinor line", path);
		return -EIO;
	}
	return 0;
}

int accel_node_check(const struct accel_card *card, const char *rel, long want_minor, struct accel_devnode *node,
                     char *why, size_t whylen)
{
	struct stat st;

	memset(node, 0, sizeof(*node));
	snprintf(node->path, sizeof(node->path), "/dev/%s", rel);
	snprintf(node->host_path, sizeof(node->host_path), "%s/%s", card->dev_root, rel);
	if (stat(node->host_path, &st)) {
		int err = errno;
		snprintf(why, whylen, "device node %s: %s", node->host_path, strerror(err));
		return -err;
	}
	if (!S_ISCHR(st.st_mode)) {
		snprintf(why, whylen, "device node %s is not a character device", node->host_path);
		return -EINVAL;
	}
	node->major = major(st.st_rdev);
	node->minor = minor(st.st_rdev);
	if (want_minor >= 0 && node->minor != (unsigned long)want_minor) {
		snprintf(why, whylen, "device node %s has minor %u, expected %ld", node->host_path, node->minor,
		         want_minor);
		return -EXDEV;
	}
	return 0;
}

static int push(struct accel_devnode **out, size_t *n, const struct accel_devnode *node)
{
	struct accel_devnode *grown = realloc(*out, (*n + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	*out = grown;
	(*out)[(*n)++] = *node;
	return 0;
}

int accel_card_nodes(const struct accel_card *card, struct accel_devnode **out, size_t *n, char *why, size_t whylen)
{
	const struct accel_family *f = card->family;
	struct accel_devnode node;
	char rel[128];
	int ret;

	*out = NULL;
	*n = 0;
	for (size_t i = 0; f->control_nodes[i]; i++) {
		ret = accel_node_check(card, f->control_nodes[i], -1, &node, why, whylen);
		node.control = 1;
		if (!ret)
			ret = push(out, n, &node);
		if (ret)
			goto fail;
	}
	snprintf(rel, sizeof(rel), "%s%u", f->card_node_prefix, f->card_node_by_minor ? card->minor : card->ordinal);
	ret = accel_node_check(card, rel, card->minor, &node, why, whylen);
	if (ret == -EXDEV) {
		size_t l = strlen(why);
		snprintf(why + l, whylen - l, " (the driver reports minor %u for %s: the path no longer addresses it)",
		         card->minor, card->name);
	}
	if (!ret)
		ret = push(out, n, &node);
	if (ret)
		goto fail;
	for (size_t i = 0; f->optional_nodes[i]; i++) {
		char ignored[256];
		if (accel_node_check(card, f->optional_nodes[i], -1, &node, ignored, sizeof(ignored)) == 0) {
			node.control = 1;
			ret = push(out, n, &node);
			if (ret)
				goto fail;
		}
	}
	return 0;
fail:
	free(*out);
	*out = NULL;
	*n = 0;
	return ret;
}

static int cap_node(const struct accel_card *card, unsigned gi, int ci, struct accel_devnode *node, char *why,
                    size_t whylen)
{
	char rel[128];
	unsigned minor;
	int ret = accel_cap_minor(card, gi, ci, &minor, why, whylen);

	if (ret)
		return ret;
	snprintf(rel, sizeof(rel), "%s%u", card->family->cap_node_prefix, minor);
	return accel_node_check(card, rel, minor, node, why, whylen);
}

int accel_job_nodes(const struct accel_card *card, unsigned gi, unsigned ci, struct accel_devnode **out, size_t *n,
                    char *why, size_t whylen)
{
	struct accel_devnode node;
	int ret = accel_card_nodes(card, out, n, why, whylen);

	if (ret)
		return ret;
	ret = cap_node(card, gi, -1, &node, why, whylen);
	if (!ret)
		ret = push(out, n, &node);
	if (!ret)
		ret = cap_node(card, gi, (int)ci, &node, why, whylen);
	if (!ret)
		ret = push(out, n, &node);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}
