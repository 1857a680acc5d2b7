/* SPDX-License-Identifier: MIT */
#include "core/cdi.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/family.h"

void accel_cdi_kind(const struct accel_family *f, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", f->cdi_vendor, f->tree_prefix);
}

static bool is_control(const struct accel_family *f, const struct accel_devnode *n)
{
	for (size_t i = 0; f->control_nodes[i]; i++)
		if (!strcmp(n->path + 5, f->control_nodes[i]))
			return true;
	for (size_t i = 0; f->optional_nodes[i]; i++)
		if (!strcmp(n->path + 5, f->optional_nodes[i]))
			return true;
	return false;
}

static json_t *node_json(const struct accel_devnode *n)
{
	return json_pack("{s:s, s:s, s:s, s:I, s:I, s:s}", "path", n->path, "hostPath", n->host_path, "type", "c",
			 "major", (json_int_t)n->major, "minor", (json_int_t)n->minor, "permissions", "rw");
}

/* Append a job's device entry; its shared nodes go to common (deduplicated). */
static int add_job(json_t *devices, json_t *common, const struct accel_device *d, const struct accel_job *j)
{
	json_t *nodes = json_array(), *dev;

	if (!nodes)
		return -1;
	for (size_t i = 0; i < j->n_nodes; i++) {
		const struct accel_devnode *n = &j->nodes[i];
		if (!is_control(d->family, n)) {
			json_array_append_new(nodes, node_json(n));
			continue;
		}
		bool seen = false;
		size_t k;
		json_t *v;
		json_array_foreach(common, k, v)
			seen = seen || !strcmp(json_string_value(json_object_get(v, "path")), n->path);
		if (!seen)
			json_array_append_new(common, node_json(n));
	}
	dev = json_pack("{s:s, s:{s:o}}", "name", j->name, "containerEdits", "deviceNodes", nodes);
	if (!dev)
		return -1;
	return json_array_append_new(devices, dev);
}

static char *finish(const struct accel_family *f, json_t *devices, json_t *common)
{
	char kind[128];
	json_t *spec;
	char *text;

	accel_cdi_kind(f, kind, sizeof(kind));
	spec = json_pack("{s:s, s:s, s:o, s:{s:o}}", "cdiVersion", ACCEL_CDI_VERSION, "kind", kind, "devices", devices,
			 "containerEdits", "deviceNodes", common);
	if (!spec)
		return NULL;
	text = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(spec);
	return text;
}

char *accel_cdi_job_spec(const struct accel_device *d, const struct accel_job *j)
{
	json_t *devices = json_array(), *common = json_array();

	if (!devices || !common || add_job(devices, common, d, j)) {
		json_decref(devices);
		json_decref(common);
		return NULL;
	}
	return finish(d->family, devices, common);
}

char *accel_cdi_node_spec(const struct accel_snapshot *s, const struct accel_family *f)
{
	json_t *devices = json_array(), *common = json_array();
	bool any = false;

	for (size_t i = 0; devices && common && i < s->n_devices; i++) {
		const struct accel_device *d = &s->devices[i];
		if (d->family != f)
			continue;
		any = true;
		for (size_t k = 0; k < d->n_jobs; k++)
			if (d->jobs[k].state == ACCEL_JOB_READY && add_job(devices, common, d, &d->jobs[k])) {
				json_decref(devices);
				json_decref(common);
				return NULL;
			}
	}
	if (!any || !devices || !common) {
		json_decref(devices);
		json_decref(common);
		return NULL;
	}
	return finish(f, devices, common);
}
