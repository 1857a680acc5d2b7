/* SPDX-License-Identifier: MIT */
/*
 * barswap info and --json (tools/barswap_show.h).  The keys are the tree's
 * (fs/dies_render.c, fs/node_json.c): dies/<n>/info is the reference, and
 * tests/service/test_tools.py compares the two on a mounted node.
 */
#include "tools/barswap_show.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "tools/barswap_cli.h"

int bs_check_die(bs_context *ctx, int die)
{
	bs_status st;

	if (bs_query(ctx, &st))
		return fail("query");
	if (die < 0 || (uint32_t)die >= st.num_dies) {
		if (st.num_dies)
			fprintf(stderr,
			        "barswap: there is no die %d: this slot has dies 0 to %" PRIu32
			        " (barswap query lists them)\n",
			        die, st.num_dies - 1);
		else
			fprintf(stderr, "barswap: there is no die %d: this slot has no dies\n", die);
		errno = EINVAL;
		return 1;
	}
	return 0;
}

int bs_die_view_get(bs_context *ctx, int die, struct bs_die_view *out)
{
	bs_status st;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = bs_check_die(ctx, die);
	if (ret)
		return ret;
	if (bs_query(ctx, &st))
		return fail("query");
	if (bs_die_info_get(ctx, die, &out->info))
		return fail("die info");
	/* A module without lending: every die bound to bar_swap, pinned (as dies/<n>/info says). */
	if (bs_die_lend_get(ctx, die, &out->lend)) {
		memset(&out->lend, 0, sizeof(out->lend));
		snprintf(out->lend.driver, sizeof(out->lend.driver), "%s",
		         out->info.flags & BS_DIE_PRESENT ? "bar_swap" : "");
	}
	out->state = out->lend.state != BS_LEND_NONE ? bs_lend_state_name(out->lend.state) : NULL;
	if (!out->state)
		out->state = out->info.flags & BS_DIE_ACTIVE ? "held" : "parked";
	if (out->info.flags & BS_DIE_ACTIVE)
		out->held_by = st.owner_pid;
	return 0;
}

void bs_die_view_print(const struct bs_die_view *v)
{
	const bs_die_info *d = &v->info;

	printf("die: %" PRIu32 "\n", d->die);
	printf("bus_id: %s\n", d->bus_id);
	printf("vram_bytes: %" PRIu64 "\n", d->vram_size);
	printf("enabled: %d\n", !!(d->flags & BS_DIE_ENABLED));
	printf("present: %d\n", !!(d->flags & BS_DIE_PRESENT));
	printf("active: %d\n", !!(d->flags & BS_DIE_ACTIVE));
	printf("state: %s\n", v->state);
	if (d->flags & BS_DIE_ACTIVE)
		printf("held_by: pid %d\n", v->held_by);
	printf("driver: %s\n", v->lend.driver);
	if (v->lend.state != BS_LEND_NONE) {
		printf("lent_to: %s\n", v->lend.driver);
		printf("lender_pid: %" PRId32 "\n", v->lend.lender_pid);
	}
	printf("policy: %s\n", v->lend.policy == BS_POLICY_RESIDENT ? "resident" : "pinned");
	printf("acquires: %" PRIu64 "\n", d->acquires);
	if (d->flags & BS_DIE_SIM)
		printf("pci_id: none (simulated)\n");
	else
		printf("pci_id: %04x:%04x\n", d->vendor, d->device);
	if (d->bar_phys)
		printf("bar_phys: 0x%" PRIx64 "\n", d->bar_phys);
}

/* node.json's die: info's keys, flags as booleans, absent values null. */
static json_t *die_json(const struct bs_die_view *v)
{
	const bs_die_info *d = &v->info;
	bool lent = v->lend.state != BS_LEND_NONE;
	char pci[16];

	snprintf(pci, sizeof(pci), "%04x:%04x", d->vendor, d->device);
	return json_pack("{s:I,s:s,s:I,s:b,s:b,s:b,s:s,s:o,s:s,s:o,s:o,s:s,s:I,s:o,s:o}", "die", (json_int_t)d->die,
	                 "bus_id", d->bus_id, "vram_bytes", (json_int_t)d->vram_size, "enabled",
	                 !!(d->flags & BS_DIE_ENABLED), "present", !!(d->flags & BS_DIE_PRESENT), "active",
	                 !!(d->flags & BS_DIE_ACTIVE), "state", v->state, "held_by",
	                 d->flags & BS_DIE_ACTIVE ? json_integer(v->held_by) : json_null(), "driver", v->lend.driver,
	                 "lent_to", lent ? json_string(v->lend.driver) : json_null(), "lender_pid",
	                 lent ? json_integer(v->lend.lender_pid) : json_null(), "policy",
	                 v->lend.policy == BS_POLICY_RESIDENT ? "resident" : "pinned", "acquires",
	                 (json_int_t)d->acquires, "pci_id", d->flags & BS_DIE_SIM ? json_null() : json_string(pci),
	                 "bar_phys", d->bar_phys ? json_integer((json_int_t)d->bar_phys) : json_null());
}

static int print_json(json_t *o)
{
	if (!o || json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || putchar('\n') == EOF) {
		json_decref(o);
		errno = ENOMEM;
		return fail("json");
	}
	json_decref(o);
	return 0;
}

int bs_json_info(bs_context *ctx, int die)
{
	struct bs_die_view v;
	int ret = bs_die_view_get(ctx, die, &v);

	return ret ? ret : print_json(die_json(&v));
}

/* node.json's `dies`: the slot (the keys of dies/slot the slot itself knows) and every die. */
int bs_json_query(bs_context *ctx)
{
	bs_lease_info l;
	bs_status st;
	json_t *dies, *slot, *lease_ms = json_null(), *lease_left = json_null();

	if (bs_query(ctx, &st))
		return fail("query");
	if (!bs_lease_get(ctx, &l)) { /* a module without leases: null */
		json_decref(lease_ms);
		lease_ms = json_integer(l.lease_ms);
		if (l.lease_left_ms >= 0) {
			json_decref(lease_left);
			lease_left = json_integer(l.lease_left_ms);
		}
	}
	dies = json_array();
	for (uint32_t i = 0; dies && i < st.num_dies; i++) {
		struct bs_die_view v;
		int ret = bs_die_view_get(ctx, (int)i, &v);
		if (ret) {
			json_decref(dies);
			json_decref(lease_ms);
			json_decref(lease_left);
			return ret;
		}
		json_array_append_new(dies, die_json(&v));
	}
	slot = json_pack("{s:o,s:I,s:I,s:o,s:o,s:I,s:I,s:I,s:I,s:s}", "active",
	                 st.active_die >= 0 ? json_integer(st.active_die) : json_null(), "swaps", (json_int_t)st.swaps,
	                 "owner_pid", (json_int_t)st.owner_pid, "lease_ms", lease_ms, "lease_left_ms", lease_left,
	                 "slot_waiters", (json_int_t)st.waiters, "slot_open_files", (json_int_t)st.open_files,
	                 "slot_size", (json_int_t)st.slot_size, "dies", (json_int_t)st.num_dies, "backend",
	                 bs_backend(ctx));
	return print_json(json_pack("{s:o,s:o}", "slot", slot, "dies", dies));
}
