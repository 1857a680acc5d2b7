/* SPDX-License-Identifier: MIT */
#include "core/model/names.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

const char *accel_name_verdict_str(enum accel_name_verdict v)
{
	switch (v) {
	case ACCEL_NAME_OK:
		return "ok";
	case ACCEL_NAME_EMPTY:
		return "the driver reported no name";
	case ACCEL_NAME_VARIANT:
		return "a media/graphics variant (+me, +gfx)";
	case ACCEL_NAME_INVALID:
		return "the name cannot be a resource-name segment";
	case ACCEL_NAME_NO_ROUNDTRIP:
		return "the name does not round-trip through publishing";
	}
	return "unknown";
}

bool accel_name_is_segment(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63)
		return false;
	if (!isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!isalnum(c) && c != '-' && c != '_' && c != '.')
			return false;
	}
	return true;
}

enum accel_name_verdict accel_name_normalize(const char *raw, char *out, size_t outlen)
{
	const char *start = NULL, *end = NULL, *p = raw;
	size_t n;

	if (outlen)
		out[0] = '\0';
	/* Find the last whitespace-separated field. */
	while (*p) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		start = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
		end = p;
	}
	if (!start)
		return ACCEL_NAME_EMPTY;
	n = (size_t)(end - start);
	if (n >= outlen || n >= ACCEL_NAME_MAX)
		return ACCEL_NAME_INVALID;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)start[i]);
	out[n] = '\0';
	if (strchr(out, '+'))
		return ACCEL_NAME_VARIANT;
	if (!accel_name_is_segment(out))
		return ACCEL_NAME_INVALID;
	return ACCEL_NAME_OK;
}

/* Parse "<C>g<M>gb" (sep = 0) or "<C>g.<M>gb" (sep = '.'): both numbers all digits. */
static bool parse_geometry(const char *s, char sep, unsigned long *c, unsigned long *m)
{
	char tail[4];
	int used = 0;

	if (!isdigit((unsigned char)s[0]))
		return false;
	if (sep) {
		if (sscanf(s, "%lug.%lu%3s%n", c, m, tail, &used) != 3)
			return false;
	} else {
		if (sscanf(s, "%lug%lu%3s%n", c, m, tail, &used) != 3)
			return false;
	}
	if (strcmp(tail, "gb") || s[used] != '\0')
		return false;
	/* Reject signs, spaces and leading junk sscanf would have skipped. */
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != 'g' && *p != 'b' && *p != sep)
			return false;
	/* "4g.48gb" must not parse as unseparated, and vice versa. */
	return sep ? strchr(s, '.') != NULL : strchr(s, '.') == NULL;
}

void accel_name_publish(const char *vendor, bool geometry, char *out, size_t outlen)
{
	unsigned long c, m;

	if (geometry && parse_geometry(vendor, 0, &c, &m))
		snprintf(out, outlen, "%lug.%lugb", c, m);
	else
		snprintf(out, outlen, "%s", vendor);
}

void accel_name_vendor(const char *published, bool geometry, char *out, size_t outlen)
{
	unsigned long c, m;

	if (geometry && parse_geometry(published, '.', &c, &m))
		snprintf(out, outlen, "%lug%lugb", c, m);
	else
		snprintf(out, outlen, "%s", published);
}

enum accel_name_verdict accel_name_from_driver(const char *raw, bool geometry, char *out, size_t outlen,
                                               char *vendor_out, size_t vendor_len)
{
	char vendor[ACCEL_NAME_MAX], published[ACCEL_NAME_MAX], back[ACCEL_NAME_MAX];
	enum accel_name_verdict v = accel_name_normalize(raw, vendor, sizeof(vendor));

	if (outlen)
		out[0] = '\0';
	if (v != ACCEL_NAME_OK)
		return v;
	accel_name_publish(vendor, geometry, published, sizeof(published));
	accel_name_vendor(published, geometry, back, sizeof(back));
	if (strcmp(back, vendor) || !accel_name_is_segment(published))
		return ACCEL_NAME_NO_ROUNDTRIP;
	snprintf(out, outlen, "%s", published);
	if (vendor_out)
		snprintf(vendor_out, vendor_len, "%s", vendor);
	return ACCEL_NAME_OK;
}

void accel_name_nvml_geometry(unsigned index, unsigned slices, unsigned long long memory_mib,
                              unsigned long long total_mib, char *out, size_t outlen)
{
	unsigned long long gib;
	const char *variant = "";

	if (total_mib) {
		unsigned long long eighths = (memory_mib * 8 + total_mib - 1) / total_mib;
		gib = (eighths * ((total_mib + 1023) / 1024) + 4) / 8;
	} else {
		gib = (memory_mib + 512) / 1024;
	}
	/* NVML_GPU_INSTANCE_PROFILE_* indices that stand for a variant of a geometry. */
	switch (index) {
	case 0x7: /* 1_SLICE_REV1 */
		variant = "+me";
		break;
	case 0xA: /* 1_SLICE_GFX */
	case 0xB: /* 2_SLICE_GFX */
	case 0xC: /* 4_SLICE_GFX */
		variant = "+gfx";
		break;
	case 0xD: /* 1_SLICE_NO_ME */
	case 0xE: /* 2_SLICE_NO_ME */
		variant = "-me";
		break;
	case 0xF:  /* 1_SLICE_ALL_ME */
	case 0x10: /* 2_SLICE_ALL_ME */
		variant = "+me.all";
		break;
	}
	snprintf(out, outlen, "MIG %ug.%llugb%s", slices, gib, variant);
}
