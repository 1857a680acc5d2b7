/* SPDX-License-Identifier: MIT */
/*
 * The words a container runtime's hook passes to a job's `containers`
 * file, and the one rule for each, shared by the hook (tools/accelfs-hook.c)
 * and the daemon (fs/jobctl.c, core/state/attach.c): both refuse what the other
 * would, so that nothing in a container's state can become a second
 * command or name another container.
 *
 *   container id  runc's rule ([A-Za-z0-9_+.-], not "." or ".."; podman's
 *                 ids are 64 hex digits), 1 to ACCEL_CONTAINER_ID_MAX bytes
 *   MIG UUID      what the CDI specs name an instance by ("MIG-<uuid>", or
 *                 NVIDIA's older "MIG-GPU-<uuid>/<gi>/<ci>"): a letter or
 *                 digit, then [A-Za-z0-9._/:-], 1 to ACCEL_MIG_UUID_MAX bytes
 *
 * Header-only: the hook links nothing of core/.
 */
#ifndef ACCEL_CONTAINER_ID_H
#define ACCEL_CONTAINER_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define ACCEL_CONTAINER_ID_MAX 128
#define ACCEL_CONTAINER_ID_RULE "1 to 128 of [A-Za-z0-9_+.-], not '.' or '..'"
#define ACCEL_MIG_UUID_MAX 95 /* ACCEL_UUID_MAX (core/model/model.h) less its NUL */

static inline bool accel_id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Is id (len bytes, which may hold a NUL) a container id? */
static inline bool accel_container_id_ok(const char *id, size_t len)
{
	if (len == 0 || len > ACCEL_CONTAINER_ID_MAX || memchr(id, '\0', len))
		return false;
	if ((len == 1 && id[0] == '.') || (len == 2 && id[0] == '.' && id[1] == '.'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!accel_id_char(id[i]) && id[i] != '_' && id[i] != '+' && id[i] != '-' && id[i] != '.')
			return false;
	return true;
}

/* Is uuid (len bytes) a MIG UUID as the specs name it? */
static inline bool accel_mig_uuid_ok(const char *uuid, size_t len)
{
	if (len == 0 || len > ACCEL_MIG_UUID_MAX || !accel_id_char(uuid[0]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!accel_id_char(uuid[i]) && (uuid[i] == '\0' || !strchr("._/:-", uuid[i])))
			return false;
	return true;
}

/*
 * A refused word, fit to quote in a message or a log line: as much of it as
 * fits in out (len >= 1) with "...", when it was cut, every byte that is not
 * printable ASCII (a newline, a terminal's escape) as '?'.
 */
static inline const char *accel_word_quote(const char *in, size_t in_len, char *out, size_t len)
{
	size_t n = 0;

	for (; n < in_len && n + 4 < len; n++)
		out[n] = in[n] >= ' ' && in[n] <= '~' ? in[n] : '?';
	if (n < in_len && len >= 4) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = '\0';
	return out;
}

#endif
