/* SPDX-License-Identifier: MIT */
#include "sim/common/sim_uuid.h"

#include <errno.h>
#include <stdio.h>
#include <sys/random.h>

int sim_uuid_generate(const char *prefix, char *buf, size_t len)
{
	unsigned char b[16];
	size_t got = 0;
	int n;

	while (got < sizeof(b)) {
		ssize_t r = getrandom(b + got, sizeof(b) - got, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	/* Version 4, variant 1, so it reads as an ordinary random UUID. */
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	n = snprintf(buf, len, "%s%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", prefix, b[0],
	             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}
