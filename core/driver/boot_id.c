/* SPDX-License-Identifier: MIT */
#include "core/driver/boot_id.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static char boot_id[ACCEL_BOOT_ID_MAX];
static pthread_once_t boot_id_once = PTHREAD_ONCE_INIT;

static void read_boot_id(void)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (!f)
		return;
	if (!fgets(boot_id, sizeof(boot_id), f))
		boot_id[0] = '\0';
	boot_id[strcspn(boot_id, "\n")] = '\0';
	fclose(f);
}

const char *accel_boot_id(void)
{
	pthread_once(&boot_id_once, read_boot_id);
	return boot_id;
}
