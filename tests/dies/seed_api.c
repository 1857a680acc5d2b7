/* SPDX-License-Identifier: MIT */
/*
 * seed-api: a program written against the original barswap project's API and nothing
 * else (#include <barswap.h>, the nine functions), built against
 * libbarswap.so the way outside code is, and run in the QEMU guest over the
 * module.  Prints PASS/FAIL lines; exits 1 if anything failed.
 */
#include <stdio.h>
#include <string.h>

#include <barswap.h>

static int failed;

static void check(int ok, const char *what)
{
	printf("%s: barswap API: %s\n", ok ? "PASS" : "FAIL", what);
	failed += !ok;
}

int main(void)
{
	bs_context *ctx = bs_init();
	bs_gpu *g, *h;

	if (!ctx) {
		perror("FAIL: barswap API: bs_init");
		return 1;
	}
	check(bs_num_dies(ctx) >= 2, "bs_num_dies counts the dies");
	check(bs_num_slots(ctx) == 1, "bs_num_slots is 1");
	check(bs_refresh(ctx) == 0, "bs_refresh");
	g = bs_acquire(ctx, 0);
	check(g && g->vram && g->vram_size > 4096 && g->die_id == 0, "bs_acquire(0) maps die 0's VRAM");
	if (!g)
		return 1;
	check(bs_is_mapped(ctx, 0) == 1 && bs_active_die(ctx) == 0, "die 0 is in the slot, ours");
	memcpy(g->vram, "seed", 5);
	h = bs_acquire(ctx, 1); /* acquiring another die releases the active one, for the owner */
	check(h && bs_is_mapped(ctx, 1) == 1 && bs_is_mapped(ctx, 0) == 0, "bs_acquire(1) moves the slot to die 1");
	if (h) {
		memcpy(h->vram, "other", 6);
		bs_release(ctx, h);
	}
	check(bs_active_die(ctx) == -1 && bs_is_mapped(ctx, 1) == 0, "bs_release empties the slot");
	g = bs_acquire(ctx, 0);
	check(g && !memcmp(g->vram, "seed", 5), "die 0 kept its data while die 1 held the slot");
	if (g)
		bs_release(ctx, g);
	bs_free(ctx);
	return failed ? 1 : 0;
}
