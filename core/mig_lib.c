/* SPDX-License-Identifier: MIT */
#include "core/mig_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const return_names[] = {
	[MIG_SUCCESS] = "SUCCESS",
	[MIG_ERROR_UNINITIALIZED] = "UNINITIALIZED",
	[MIG_ERROR_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
	[MIG_ERROR_NOT_SUPPORTED] = "NOT_SUPPORTED",
	[MIG_ERROR_NO_PERMISSION] = "NO_PERMISSION",
	[MIG_ERROR_ALREADY_INITIALIZED] = "ALREADY_INITIALIZED",
	[MIG_ERROR_NOT_FOUND] = "NOT_FOUND",
	[MIG_ERROR_INSUFFICIENT_SIZE] = "INSUFFICIENT_SIZE",
	[MIG_ERROR_INSUFFICIENT_POWER] = "INSUFFICIENT_POWER",
	[MIG_ERROR_DRIVER_NOT_LOADED] = "DRIVER_NOT_LOADED",
	[MIG_ERROR_TIMEOUT] = "TIMEOUT",
	[MIG_ERROR_IRQ_ISSUE] = "IRQ_ISSUE",
	[MIG_ERROR_LIBRARY_NOT_FOUND] = "LIBRARY_NOT_FOUND",
	[MIG_ERROR_FUNCTION_NOT_FOUND] = "FUNCTION_NOT_FOUND",
	[MIG_ERROR_CORRUPTED_INFOROM] = "CORRUPTED_INFOROM",
	[MIG_ERROR_GPU_IS_LOST] = "GPU_IS_LOST",
	[MIG_ERROR_RESET_REQUIRED] = "RESET_REQUIRED",
	[MIG_ERROR_OPERATING_SYSTEM] = "OPERATING_SYSTEM",
	[MIG_ERROR_LIB_RM_VERSION_MISMATCH] = "LIB_RM_VERSION_MISMATCH",
	[MIG_ERROR_IN_USE] = "IN_USE",
	[MIG_ERROR_MEMORY] = "MEMORY",
	[MIG_ERROR_NO_DATA] = "NO_DATA",
	[MIG_ERROR_VGPU_ECC_NOT_SUPPORTED] = "VGPU_ECC_NOT_SUPPORTED",
	[MIG_ERROR_INSUFFICIENT_RESOURCES] = "INSUFFICIENT_RESOURCES",
	[MIG_ERROR_FREQ_NOT_SUPPORTED] = "FREQ_NOT_SUPPORTED",
	[MIG_ERROR_ARGUMENT_VERSION_MISMATCH] = "ARGUMENT_VERSION_MISMATCH",
	[MIG_ERROR_DEPRECATED] = "DEPRECATED",
	[MIG_ERROR_NOT_READY] = "NOT_READY",
	[MIG_ERROR_GPU_NOT_FOUND] = "GPU_NOT_FOUND",
	[MIG_ERROR_INVALID_STATE] = "INVALID_STATE",
};

const char *mig_return_name(mig_return_t r)
{
	if ((unsigned)r < sizeof(return_names) / sizeof(return_names[0]) && return_names[r])
		return return_names[r];
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
	snprintf(err, errlen, "no %s library found", prefix);
	for (size_t i = 0; i < n_candidates && !lib->handle; i++) {
		lib->handle = dlopen(candidates[i], RTLD_NOW | RTLD_LOCAL);
		if (lib->handle)
			snprintf(lib->path, sizeof(lib->path), "%s", candidates[i]);
	}
	if (!lib->handle)
		return -ENOENT;

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
