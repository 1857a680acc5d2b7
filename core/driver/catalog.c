/* SPDX-License-Identifier: MIT */
#include "core/driver/catalog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/log.h"
#include "core/model/tree_names.h"

/* Files that live beside the profile directories in <dev>/mig/. */
static const char *const reserved_names[] = { ACCEL_MIG_FILE_NAMES, NULL };

bool accel_catalog_name_reserved(const char *name)
{
	for (size_t i = 0; reserved_names[i]; i++)
		if (!strcmp(name, reserved_names[i]))
			return true;
	return false;
}

bool accel_catalog_absent(mig_return_t r)
{
	return r == MIG_ERROR_NOT_SUPPORTED || r == MIG_ERROR_NOT_FOUND || r == MIG_ERROR_INVALID_ARGUMENT;
}

void accel_catalog_clear(struct accel_catalog *c)
{
	for (size_t i = 0; i < c->n_profiles; i++)
		accel_profile_clear(&c->profiles[i]);
	free(c->profiles);
	free(c->all_ids);
	free(c->drops);
	memset(c, 0, sizeof(*c));
}

static int add_drop(struct accel_catalog *c, unsigned index, unsigned id, const char *raw, bool warn, const char *why)
{
	struct accel_catalog_drop *n = realloc(c->drops, (c->n_drops + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	c->drops = n;
	n = &c->drops[c->n_drops++];
	n->index = index;
	n->id = id;
	n->warn = warn;
	snprintf(n->raw, sizeof(n->raw), "%s", raw);
	snprintf(n->why, sizeof(n->why), "%s", why);
	return 0;
}

static int add_id(struct accel_catalog *c, unsigned id)
{
	unsigned *n;

	for (size_t i = 0; i < c->n_ids; i++)
		if (c->all_ids[i] == id)
			return 0;
	n = realloc(c->all_ids, (c->n_ids + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->all_ids = n;
	c->all_ids[c->n_ids++] = id;
	return 0;
}

/* Read the legal placements of a profile id; 0 with n == 0 when it has none. */
static mig_return_t read_placements(const struct accel_card *card, unsigned id, struct accel_span **out, size_t *n)
{
	mig_gpu_instance_placement_t *buf;
	unsigned count = 0;
	mig_return_t r;

	*out = NULL;
	*n = 0;
	r = card->lib->DeviceGetGpuInstancePossiblePlacements_v2(card->handle, id, NULL, &count);
	if (r != MIG_SUCCESS || count == 0)
		return r;
	buf = calloc(count, sizeof(*buf));
	if (!buf)
		return MIG_ERROR_MEMORY;
	r = card->lib->DeviceGetGpuInstancePossiblePlacements_v2(card->handle, id, buf, &count);
	if (r == MIG_SUCCESS && count) {
		*out = calloc(count, sizeof(**out));
		if (!*out) {
			free(buf);
			return MIG_ERROR_MEMORY;
		}
		for (unsigned i = 0; i < count; i++)
			(*out)[i] = (struct accel_span){ buf[i].start, buf[i].size };
		*n = count;
	}
	free(buf);
	return r;
}

static bool same_geometry(const struct accel_profile *a, const struct accel_profile *b)
{
	return a->slice_count == b->slice_count && a->memory_mib == b->memory_mib &&
	       a->instance_count == b->instance_count && a->n_placements == b->n_placements &&
	       !memcmp(a->placements, b->placements, a->n_placements * sizeof(*a->placements));
}

/*
 * Two raw names that normalize to one published name: identical geometry
 * is an alias (keep the first); anything else is ambiguous and both are
 * withheld, since a request by that name could not say which one it meant.
 */
static int resolve_collisions(struct accel_catalog *c)
{
	bool *withhold = calloc(c->n_profiles + 1, sizeof(*withhold));
	bool *alias = calloc(c->n_profiles + 1, sizeof(*alias));
	size_t w = 0;
	int ret = 0;

	if (!withhold || !alias) {
		free(withhold);
		free(alias);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n_profiles; i++)
		for (size_t j = i + 1; j < c->n_profiles; j++) {
			if (strcmp(c->profiles[i].name, c->profiles[j].name))
				continue;
			if (same_geometry(&c->profiles[i], &c->profiles[j]))
				alias[j] = true;
			else
				withhold[i] = withhold[j] = true;
		}
	for (size_t i = 0; i < c->n_profiles; i++) {
		struct accel_profile *p = &c->profiles[i];
		if (withhold[i] || alias[i]) {
			char why[160];
			if (withhold[i])
				snprintf(
					why, sizeof(why),
					"ambiguous: another profile is also published as '%s' with a different geometry",
					p->name);
			else
				snprintf(why, sizeof(why), "an alias of another profile published as '%s'", p->name);
			if (!ret)
				ret = add_drop(c, p->index, p->id, p->driver_name, withhold[i], why);
			accel_profile_clear(p);
			continue;
		}
		c->profiles[w++] = *p;
	}
	c->n_profiles = w;
	free(withhold);
	free(alias);
	return ret;
}

static unsigned long long card_memory_mib(const struct accel_card *card)
{
	mig_memory_t mem;

	if (card->lib->DeviceGetMemoryInfo && card->lib->DeviceGetMemoryInfo(card->handle, &mem) == MIG_SUCCESS)
		return mem.total >> 20;
	return 0;
}

int accel_catalog_probe(const struct accel_card *card, struct accel_catalog *out, char *err, size_t errlen)
{
	const struct accel_family *f = card->family;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	err[0] = '\0';
	for (unsigned index = 0; index < f->gi_profile_count; index++) {
		mig_gpu_instance_profile_info_v3_t info;
		struct accel_profile p;
		enum accel_name_verdict v;
		mig_return_t r;
		char why[160];

		memset(&info, 0, sizeof(info));
		info.version = MIG_GPU_INSTANCE_PROFILE_INFO_V3;
		r = card->lib->DeviceGetGpuInstanceProfileInfoV(card->handle, index, &info);
		if (accel_catalog_absent(r))
			continue;
		if (r != MIG_SUCCESS) {
			snprintf(err, errlen, "%s: probing GPU-instance profile index %u failed: %s (%s)", card->name,
			         index, mig_lib_strerror(card->lib, r), mig_return_name(r));
			ret = -mig_return_errno(r);
			goto fail;
		}
		info.name[sizeof(info.name) - 1] = '\0';
		ret = add_id(out, info.id);
		if (ret)
			goto fail;

		memset(&p, 0, sizeof(p));
		p.index = index;
		p.id = info.id;
		snprintf(p.driver_name, sizeof(p.driver_name), "%s", info.name);
		p.slice_count = info.sliceCount;
		p.instance_count = info.instanceCount;
		p.memory_mib = info.memorySizeMB;
		p.multiprocessors = info.multiprocessorCount;
		p.copy_engines = info.copyEngineCount;
		p.decoders = info.decoderCount;
		p.encoders = info.encoderCount;
		p.jpegs = info.jpegCount;
		p.ofas = info.ofaCount;

		if (info.capabilities & MIG_GPU_INSTANCE_PROFILE_CAPS_GFX) {
			ret = add_drop(out, index, info.id, info.name, false, "a graphics variant (GFX capability)");
			if (ret)
				goto fail;
			continue;
		}
		if (!info.name[0] && f->name_unnamed_from_geometry) {
			accel_name_nvml_geometry(index, info.sliceCount, info.memorySizeMB, card_memory_mib(card),
			                         info.name, sizeof(info.name));
			snprintf(p.driver_name, sizeof(p.driver_name), "%s", info.name);
		}
		v = accel_name_from_driver(info.name, f->publish_geometry, p.name, sizeof(p.name), p.vendor_name,
		                           sizeof(p.vendor_name));
		if (v != ACCEL_NAME_OK) {
			ret = add_drop(out, index, info.id, info.name, v != ACCEL_NAME_VARIANT,
			               accel_name_verdict_str(v));
			if (ret)
				goto fail;
			continue;
		}
		if (accel_catalog_name_reserved(p.name)) {
			snprintf(why, sizeof(why), "the name '%s' is reserved for a file of mig/", p.name);
			ret = add_drop(out, index, info.id, info.name, true, why);
			if (ret)
				goto fail;
			continue;
		}
		r = read_placements(card, info.id, &p.placements, &p.n_placements);
		if (r != MIG_SUCCESS || p.n_placements == 0) {
			if (r != MIG_SUCCESS)
				snprintf(why, sizeof(why), "its placements could not be read: %s (%s)",
				         mig_lib_strerror(card->lib, r), mig_return_name(r));
			else
				snprintf(why, sizeof(why),
				         "the driver lists no legal placement, so its span is unknown");
			accel_profile_clear(&p);
			ret = add_drop(out, index, info.id, info.name, true, why);
			if (ret)
				goto fail;
			continue;
		}
		p.span = p.placements[0].size;

		struct accel_profile *np = realloc(out->profiles, (out->n_profiles + 1) * sizeof(*np));
		if (!np) {
			accel_profile_clear(&p);
			ret = -ENOMEM;
			goto fail;
		}
		out->profiles = np;
		out->profiles[out->n_profiles++] = p;
	}
	ret = resolve_collisions(out);
	if (ret)
		goto fail;
	return 0;
fail:
	if (!err[0])
		snprintf(err, errlen, "%s: discovery failed: %s", card->name, strerror(-ret));
	accel_catalog_clear(out);
	return ret;
}
