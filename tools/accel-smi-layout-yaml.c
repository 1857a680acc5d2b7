/* SPDX-License-Identifier: MIT */
/*
 * mig-parted's configuration file, read with libyaml's document API
 * (tools/smi-layout.h).  Every key of the format is understood or refused
 * by name: a key read wrongly would change a node's partitions.
 */
#include "tools/smi-layout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

struct reader {
	yaml_document_t doc;
	char *err;
	size_t errlen;
};

static unsigned line_of(const yaml_node_t *n)
{
	return (unsigned)n->start_mark.line + 1;
}

__attribute__((format(printf, 3, 4))) static int fail(struct reader *r, const yaml_node_t *n, const char *fmt, ...)
{
	size_t at = (size_t)snprintf(r->err, r->errlen, "line %u: ", n ? line_of(n) : 0);
	va_list ap;

	va_start(ap, fmt);
	if (at < r->errlen)
		vsnprintf(r->err + at, r->errlen - at, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in mapping m, or NULL. */
static yaml_node_t *get(struct reader *r, yaml_node_t *m, const char *key)
{
	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *k = scalar(yaml_document_get_node(&r->doc, p->key));
		if (k && !strcmp(k, key))
			return yaml_document_get_node(&r->doc, p->value);
	}
	return NULL;
}

static int number(struct reader *r, yaml_node_t *n, unsigned long max, unsigned *out, const char *what)
{
	const char *s = scalar(n);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return fail(r, n, "%s must be a number", what);
	errno = 0;
	v = strtoul(s, &end, 0);
	if (*end || errno || v > max)
		return fail(r, n, "%s must be a number", what);
	*out = (unsigned)v;
	return 0;
}

static int devices(struct reader *r, yaml_node_t *n, struct layout_cfg_entry *e)
{
	const char *s = scalar(n);

	if (s && !strcmp(s, "all")) {
		e->all_devices = true;
		return 0;
	}
	if (!n || n->type != YAML_SEQUENCE_NODE)
		return fail(r, n, "%s must be 'all' or a list of device indices", "devices");
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		if (e->n_devices == LAYOUT_CFG_MAX_DEVICES)
			return fail(r, n, "%s lists too many devices", "devices");
		if (number(r, yaml_document_get_node(&r->doc, *i), 1023, &e->devices[e->n_devices++], "a device index"))
			return -1;
	}
	return 0;
}

static int filters(struct reader *r, yaml_node_t *n, struct layout_cfg_entry *e)
{
	if (n->type == YAML_SCALAR_NODE)
		return number(r, n, 0xffffffffUL, &e->filters[e->n_filters++], "device-filter");
	if (n->type != YAML_SEQUENCE_NODE)
		return fail(r, n, "%s must be a PCI id (\"0x20B210DE\") or a list of them", "device-filter");
	for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
		if (e->n_filters == LAYOUT_CFG_MAX_FILTERS)
			return fail(r, n, "%s lists too many ids", "device-filter");
		if (number(r, yaml_document_get_node(&r->doc, *i), 0xffffffffUL, &e->filters[e->n_filters++],
		           "a device-filter id"))
			return -1;
	}
	return 0;
}

static int mig_devices(struct reader *r, yaml_node_t *n, struct layout_cfg_entry *e)
{
	if (n->type != YAML_MAPPING_NODE)
		return fail(r, n, "%s must map profile names to counts ({\"1g.18gb\": 7})", "mig-devices");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
		const char *name = scalar(k);

		if (!name || !*name || strlen(name) >= sizeof(e->profiles[0].name))
			return fail(r, k, "%s: a profile name", "mig-devices");
		if (e->n_profiles == LAYOUT_CFG_MAX_PROFILES)
			return fail(r, k, "%s: too many profiles", "mig-devices");
		snprintf(e->profiles[e->n_profiles].name, sizeof(e->profiles[0].name), "%s", name);
		if (number(r, yaml_document_get_node(&r->doc, p->value), 64, &e->profiles[e->n_profiles].count,
		           "a mig-devices count (0 to 64)"))
			return -1;
		e->n_profiles++;
	}
	return 0;
}

static int entry(struct reader *r, yaml_node_t *n, struct layout_cfg_entry *e)
{
	static const char *const known[] = { "devices", "device-filter", "mig-enabled", "mig-devices", NULL };
	const char *enabled;

	if (n->type != YAML_MAPPING_NODE)
		return fail(r, n, "%s", "an entry must be a mapping (devices, mig-enabled, mig-devices)");
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(&r->doc, p->key);
		size_t i = 0;
		while (known[i] && (!scalar(k) || strcmp(known[i], scalar(k))))
			i++;
		if (!known[i])
			return fail(r, k,
			            "unknown key '%s' (an entry has devices, device-filter, mig-enabled, mig-devices)",
			            scalar(k) ? scalar(k) : "?");
	}
	e->line = line_of(n);
	if (devices(r, get(r, n, "devices"), e))
		return -1;
	if (get(r, n, "device-filter") && filters(r, get(r, n, "device-filter"), e))
		return -1;
	enabled = scalar(get(r, n, "mig-enabled"));
	if (!enabled || (strcasecmp(enabled, "true") && strcasecmp(enabled, "false")))
		return fail(r, n, "%s must be true or false", "mig-enabled");
	e->mig_enabled = !strcasecmp(enabled, "true");
	if (get(r, n, "mig-devices") && mig_devices(r, get(r, n, "mig-devices"), e))
		return -1;
	return 0;
}

/* The configuration names, for the error that says name is not one of them. */
static void names(struct reader *r, yaml_node_t *configs, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (yaml_node_pair_t *p = configs->data.mapping.pairs.start; p < configs->data.mapping.pairs.top && at < len;
	     p++) {
		const char *k = scalar(yaml_document_get_node(&r->doc, p->key));
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", k ? k : "?");
	}
}

static int read_doc(struct reader *r, const char *name, struct layout_cfg *out)
{
	yaml_node_t *root = yaml_document_get_root_node(&r->doc), *configs, *cfg;
	const char *version = scalar(get(r, root, "version"));
	char list[512];

	if (!root)
		return fail(r, NULL, "%s", "the file is empty");
	if (!version || strcmp(version, "v1"))
		return fail(r, root, "%s", "not a mig-parted configuration: 'version: v1' is missing");
	configs = get(r, root, "mig-configs");
	if (!configs || configs->type != YAML_MAPPING_NODE)
		return fail(r, root, "%s", "'mig-configs' must map configuration names to lists of entries");
	cfg = get(r, configs, name);
	if (!cfg) {
		names(r, configs, list, sizeof(list));
		snprintf(r->err, r->errlen, "no configuration '%s' in mig-configs (it has: %s)", name, list);
		return -1;
	}
	if (cfg->type != YAML_SEQUENCE_NODE)
		return fail(r, cfg, "configuration '%s' must be a list of entries", name);
	for (yaml_node_item_t *i = cfg->data.sequence.items.start; i < cfg->data.sequence.items.top; i++) {
		if (out->n_entries == LAYOUT_CFG_MAX_ENTRIES)
			return fail(r, cfg, "configuration '%s' has too many entries", name);
		if (entry(r, yaml_document_get_node(&r->doc, *i), &out->entries[out->n_entries++]))
			return -1;
	}
	return 0;
}

int layout_cfg_read(const char *path, const char *name, struct layout_cfg *out, char *err, size_t errlen)
{
	struct reader r = { .err = err, .errlen = errlen };
	yaml_parser_t parser;
	FILE *f = fopen(path, "re");
	int ret;

	memset(out, 0, sizeof(*out));
	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!yaml_parser_initialize(&parser)) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &r.doc)) {
		snprintf(err, errlen, "%s: line %zu: %s", path, parser.problem_mark.line + 1,
		         parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		fclose(f);
		return -1;
	}
	ret = read_doc(&r, name, out);
	yaml_document_delete(&r.doc);
	yaml_parser_delete(&parser);
	fclose(f);
	return ret;
}
