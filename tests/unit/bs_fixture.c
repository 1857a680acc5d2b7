/* SPDX-License-Identifier: MIT */
#include "tests/unit/bs_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cmocka.h>

int bs_fx_make_dir(char *dir, size_t len, const char *prefix)
{
	if ((size_t)snprintf(dir, len, "/tmp/%s-XXXXXX", prefix) >= len)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
}

int bs_fx_remove_dir(const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) ? -1 : 0;
}

struct bs_slot *bs_fx_open_slot(const char *dir, const struct bs_sim_geometry *geo)
{
	char err[256];
	int ret;
	struct bs_slot *s = bs_slot_sim_open(dir, geo, &ret, err, sizeof(err));

	if (!s)
		fail_msg("bs_slot_sim_open: %s", err);
	return s;
}

void bs_fx_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

void bs_fx_wait_for_waiters(struct bs_slot *s, uint32_t n)
{
	bs_status st;

	for (int i = 0; i < 400; i++) {
		assert_int_equal(bs_slot_query(s, &st), 0);
		if (st.waiters == n)
			return;
		bs_fx_sleep_ms(5);
	}
	fail_msg("never saw %u waiters (saw %u)", n, st.waiters);
}
