/* SPDX-License-Identifier: MIT */
#include "core/driver/mig_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const return_names[MIG_RETURN_DENSE] = {
#define RETURN_NAME(name, value) [value] = #name,
	MIG_RETURN_CODES(RETURN_NAME)
#undef RETURN_NAME
};

const char *mig_return_name(mig_return_t r)
{
	/* The vendors' own spelling: NVML_ERROR_IN_USE is "IN_USE", NVML_SUCCESS "SUCCESS". */
	if ((unsigned)r < MIG_RETURN_DENSE && return_names[r])
		return strncmp(return_names[r], "ERROR_", 6) ? return_names[r] : return_names[r] + 6;
	return r == MIG_ERROR_UNKNOWN ? "UNKNOWN" : "UNRECOGNIZED";
}

const char *mig_lib_strerror(const struct mig_lib *lib, mig_return_t r)
{
	const char *s = NULL;

	if (lib && lib->ErrorString)
		s = lib->ErrorString(r);
	return s && *s ? s : mig_return_name(r);
}

int mig_return_errno(mig_return_t r)
{
	switch (r) {
	case MIG_SUCCESS:
		return 0;
	case MIG_ERROR_INSUFFICIENT_RESOURCES:
		return ENOSPC;
	case MIG_ERROR_IN_USE:
		return EBUSY;
	case MIG_ERROR_NO_PERMISSION:
		return EPERM;
	case MIG_ERROR_NOT_SUPPORTED:
		return EOPNOTSUPP;
	case MIG_ERROR_NOT_FOUND:
		return ENOENT;
	case MIG_ERROR_INVALID_ARGUMENT:
		return EINVAL;
	case MIG_ERROR_TIMEOUT:
		return ETIMEDOUT;
	case MIG_ERROR_GPU_IS_LOST:
	case MIG_ERROR_DRIVER_NOT_LOADED:
	case MIG_ERROR_GPU_NOT_FOUND:
		return ENODEV;
	case MIG_ERROR_MEMORY:
		return ENOMEM;
	default:
		return EIO;
	}
}

static void *find_symbol(void *handle, const char *prefix, const char *suffix)
{
	char name[128];

	snprintf(name, sizeof(name), "%s%s", prefix, suffix);
	return dlsym(handle, name);
}

static int resolve(struct mig_lib *lib, char *err, size_t errlen)
{
	void *sym;

	/*
	 * Each member is assigned through a void* of the right size: POSIX
	 * guarantees dlsym results convert to function pointers.
	 */
#define MIG_LIB_REQUIRE(suffix, params, args)                                                                          \
	sym = find_symbol(lib->handle, lib->prefix, #suffix);                                                          \
	if (!sym) {                                                                                                    \
		snprintf(err, errlen, "%s lacks %s%s: not a usable %s driver library", lib->path, lib->prefix,         \
		         #suffix, lib->prefix);                                                                        \
		return -ENOSYS;                                                                                        \
	}                                                                                                              \
	memcpy(&lib->suffix, &sym, sizeof(sym));
	MIG_ABI_FUNCTIONS(MIG_LIB_REQUIRE)
#undef MIG_LIB_REQUIRE

#define MIG_LIB_OPTIONAL(suffix, params, args)                                                                         \
	sym = find_symbol(lib->handle, lib->prefix, #suffix);                                                          \
	memcpy(&lib->suffix, &sym, sizeof(sym));
	MIG_ABI_OPTIONAL_FUNCTIONS(MIG_LIB_OPTIONAL)
#undef MIG_LIB_OPTIONAL

	sym = find_symbol(lib->handle, lib->prefix, "ErrorString");
	memcpy(&lib->ErrorString, &sym, sizeof(sym));
	return 0;
}

int mig_lib_open(struct mig_lib *lib, const char *prefix, const char *const *candidates, size_t n_candidates, char *err,
                 size_t errlen)
{
	mig_return_t r;
	int ret;

	memset(lib, 0, sizeof(*lib));
	snprintf(lib->prefix, sizeof(lib->prefix), "%s", prefix);
	/* Where it looked, in order, so that "not found" says where to put the library or what to set. */
	int n = snprintf(err, errlen, "no %s library found (looked for", prefix);
	for (size_t i = 0; i < n_candidates && !lib->handle; i++) {
		lib->handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
		if (lib->handle)
			snprintf(lib->path, sizeof(lib->path), "%s", candidates[i]);
		else if (n >= 0 && (size_t)n < errlen)
			n += snprintf(err + n, errlen - (size_t)n, "%s %s%s", i ? "," : "", candidates[i],
			              strchr(candidates[i], '/') ? "" : " on the loader's path");
	}
	if (!lib->handle) {
		if (n >= 0 && (size_t)n < errlen)
			snprintf(err + n, errlen - (size_t)n, ")");
		return -ENOENT;
	}

	ret = resolve(lib, err, errlen);
	if (ret)
		goto fail;
	r = lib->Init_v2();
	if (r != MIG_SUCCESS) {
		snprintf(err, errlen, "%sInit_v2 failed: %s (%s)", prefix, mig_lib_strerror(lib, r),
		         mig_return_name(r));
		ret = -mig_return_errno(r);
		if (ret == 0 || ret == -ENOENT)
			ret = -EIO;
		goto fail;
	}
	err[0] = '\0';
	return 0;
fail:
	dlclose(lib->handle);
	lib->handle = NULL;
	return ret;
}

void mig_lib_close(struct mig_lib *lib)
{
	if (!lib->handle)
		return;
	lib->Shutdown();
	dlclose(lib->handle);
	lib->handle = NULL;
}
