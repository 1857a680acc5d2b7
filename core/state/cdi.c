/* SPDX-License-Identifier: MIT */
#include "core/state/cdi.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/driver/family.h"
#include "core/state/record.h"

/* Set once at start-up (accel_cdi_configure), read by every spec after. */
static char hook_program[PATH_MAX];
static char mountpoint[PATH_MAX];

void accel_cdi_configure(const char *program, const char *mnt)
{
	snprintf(hook_program, sizeof(hook_program), "%s", program ? program : "");
	snprintf(mountpoint, sizeof(mountpoint), "%s", mnt ? mnt : "");
}

bool accel_cdi_hooked(void)
{
	return hook_program[0] && mountpoint[0];
}

/* What the spec needs of the CDI versions: hostPath and digit-first names came in 0.5.0. */
struct needs {
	bool host_path;
	bool digit_name;
};

static const char *version_for(const struct needs *n)
{
	return n->host_path || n->digit_name ? "0.5.0" : "0.3.0";
}

static const char *node_rel(const struct accel_devnode *n)
{
	return strncmp(n->path, "/dev/", 5) ? n->path : n->path + 5;
}

static bool is_control(const struct accel_family *f, const struct accel_devnode *n)
{
	const char *rel = node_rel(n);

	for (size_t i = 0; f->control_nodes[i]; i++)
		if (!strcmp(rel, f->control_nodes[i]))
			return true;
	for (size_t i = 0; f->optional_nodes[i]; i++)
		if (!strcmp(rel, f->optional_nodes[i]))
			return true;
	return false;
}

/* The job's directory in the mounted tree: what the hooks write to and a job spec's nodes are found in. */
static int job_dir(const struct accel_device *d, const struct accel_job *j, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s/mig/%s/%s", mountpoint, d->name, j->profile, j->name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * One node.  With dir (a job's own spec) the host path is the node in the
 * job's dev/ directory and the numbers are left out, so the runtime learns
 * them by stat there, and fails once the job is gone; else the numbers are
 * given and the host path only when it differs (a simulated node).
 */
static json_t *node_json(const struct accel_devnode *n, const struct accel_job *j, const char *dir, struct needs *needs)
{
	json_t *o = json_pack("{s:s}", "path", n->path);
	char host[PATH_MAX];

	if (!o)
		return NULL;
	if (dir) {
		snprintf(host, sizeof(host), "%s/dev/%s", dir, node_rel(n));
		json_object_set_new(o, "hostPath", json_string(host));
		needs->host_path = true;
	} else if (strcmp(n->host_path, n->path)) {
		json_object_set_new(o, "hostPath", json_string(n->host_path));
		needs->host_path = true;
	}
	json_object_set_new(o, "type", json_string("c"));
	if (!dir) {
		json_object_set_new(o, "major", json_integer(n->major));
		json_object_set_new(o, "minor", json_integer(n->minor));
	}
	json_object_set_new(o, "permissions", json_string("rw"));
	/* Without these a runtime makes every node 0666 root's: the job's delegation would stop at the door. */
	json_object_set_new(o, "fileMode", json_integer(ACCEL_JOB_NODE_MODE));
	json_object_set_new(o, "uid", json_integer(j->uid));
	json_object_set_new(o, "gid", json_integer(j->gid));
	return o;
}

static json_t *hook_json(const char *stage, const char *verb, const char *dir, const struct accel_job *j)
{
	return json_pack("{s:s, s:s, s:[s,s,s,s], s:i}", "hookName", stage, "path", hook_program, "args",
	                 "accelfs-hook", verb, dir, j->uuid, "timeout", ACCEL_CDI_HOOK_TIMEOUT);
}

/* The hooks that attach the job to the container and detach it again; none when not configured. */
static int add_hooks(json_t *edits, const struct accel_device *d, const struct accel_job *j)
{
	char dir[PATH_MAX];
	json_t *hooks;

	if (!hook_program[0] || !mountpoint[0])
		return 0;
	if (job_dir(d, j, dir, sizeof(dir)))
		return -1;
	hooks = json_pack("[o,o]", hook_json("createRuntime", "attach", dir, j),
	                  hook_json("poststop", "detach", dir, j));
	return hooks ? json_object_set_new(edits, "hooks", hooks) : -1;
}

static bool listed(json_t *nodes, const char *path)
{
	size_t i;
	json_t *v;

	json_array_foreach(nodes, i, v) if (!strcmp(json_string_value(json_object_get(v, "path")), path)) return true;
	return false;
}

/*
 * One job as a CDI device; shared nodes go to common when common is given
 * (a job's own spec, whose nodes are then found in the job's directory).
 */
static int add_job(json_t *devices, json_t *common, const struct accel_device *d, const struct accel_job *j,
                   struct needs *needs)
{
	json_t *nodes = json_array(), *edits, *dev;
	char dir_buf[PATH_MAX];
	const char *dir = NULL;

	if (!nodes)
		return -1;
	if (common && mountpoint[0]) {
		if (job_dir(d, j, dir_buf, sizeof(dir_buf))) {
			json_decref(nodes);
			return -1;
		}
		dir = dir_buf;
	}
	for (size_t i = 0; i < j->n_nodes; i++) {
		const struct accel_devnode *n = &j->nodes[i];
		json_t *target = common && is_control(d->family, n) ? common : nodes;
		if (target == common && listed(common, n->path))
			continue;
		json_array_append_new(target, node_json(n, j, dir, needs));
	}
	if (j->name[0] >= '0' && j->name[0] <= '9')
		needs->digit_name = true;
	edits = json_pack("{s:o}", "deviceNodes", nodes);
	if (!edits || add_hooks(edits, d, j)) {
		json_decref(edits);
		return -1;
	}
	dev = json_pack("{s:s, s:o}", "name", j->name, "containerEdits", edits);
	return dev ? json_array_append_new(devices, dev) : -1;
}

static char *finish(const char *kind, json_t *devices, json_t *common, const struct needs *needs)
{
	json_t *spec = json_pack("{s:s, s:s, s:o}", "cdiVersion", version_for(needs), "kind", kind, "devices", devices);
	char *text;

	if (!spec) {
		json_decref(common);
		return NULL;
	}
	if (common && json_array_size(common))
		json_object_set_new(spec, "containerEdits", json_pack("{s:o}", "deviceNodes", common));
	else
		json_decref(common);
	text = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(spec);
	return text;
}

char *accel_cdi_job_spec(const struct accel_device *d, const struct accel_job *j)
{
	json_t *devices = json_array(), *common = json_array();
	struct needs needs = { 0 };

	if (!devices || !common || add_job(devices, common, d, j, &needs)) {
		json_decref(devices);
		json_decref(common);
		return NULL;
	}
	return finish(ACCEL_CDI_JOB_KIND, devices, common, &needs);
}

bool accel_cdi_listed(const struct accel_job *j)
{
	return j->state == ACCEL_JOB_READY && !accel_job_name_check(j->name);
}

char *accel_cdi_node_job_spec(const struct accel_device *d, const struct accel_job *j)
{
	json_t *devices = json_array();
	struct needs needs = { 0 };

	if (!devices || add_job(devices, NULL, d, j, &needs)) {
		json_decref(devices);
		return NULL;
	}
	return finish(ACCEL_CDI_KIND, devices, NULL, &needs);
}

static bool same_nodes(const struct accel_job *a, const struct accel_job *b)
{
	if (a->n_nodes != b->n_nodes)
		return false;
	for (size_t i = 0; i < a->n_nodes; i++) {
		const struct accel_devnode *x = &a->nodes[i], *y = &b->nodes[i];
		if (x->major != y->major || x->minor != y->minor || strcmp(x->path, y->path) ||
		    strcmp(x->host_path, y->host_path))
			return false;
	}
	return true;
}

bool accel_cdi_same(const struct accel_device *da, const struct accel_job *a, const struct accel_device *db,
                    const struct accel_job *b)
{
	/* Everything add_job reads: the device's name (the job's directory), the job's fields, its nodes. */
	return accel_cdi_listed(a) == accel_cdi_listed(b) && !strcmp(da->name, db->name) && !strcmp(a->name, b->name) &&
	       !strcmp(a->profile, b->profile) && !strcmp(a->uuid, b->uuid) && a->uid == b->uid && a->gid == b->gid &&
	       same_nodes(a, b);
}
