/* SPDX-License-Identifier: MIT */
#include "fs/info_text.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/driver/family.h"
#include "core/model/ledger.h"
#include "core/engine/node.h"
#include "fs/holder_text.h"

void fs_device_info_text(struct fs_text *t, const struct accel_device *d)
{
	const struct accel_family *f = d->family;

	fs_put(t, "name: %s\n", d->name);
	fs_put(t, "vendor: %s\n", f->vendor);
	fs_put(t, "product: %s\n", d->product[0] ? d->product : "unknown");
	fs_put(t, "uuid: %s\n", d->uuid);
	/*
	 * The value alone, for scripts: what index, ordinal and minor mean (and
	 * which paths each names) is docs/tree.md's, not the file's.
	 */
	fs_put(t, "%s: %u\n", f->card_node_by_minor ? "index" : "ordinal", d->ordinal);
	if (d->absent)
		fs_put(t, "minor: unknown\n"); /* only the driver knows it */
	else
		fs_put(t, "minor: %u\n", d->minor);
	fs_put(t, "bus_id: %s\n", d->bus_id[0] ? d->bus_id : "unknown");
	/* What mig-parted's device-filter matches: a tool reads it here, without the driver. */
	if (d->pci_id)
		fs_put(t, "pci_id: 0x%08X\n", d->pci_id);
	if (d->memory_mib)
		fs_put(t, "memory_mib: %llu\n", d->memory_mib);
	fs_put(t, "mig_mode: %s\n", d->mig_enabled ? "enabled" : "disabled");
	fs_put(t, "driver_library: %s\n", d->library);
	fs_put(t, "pci_driver: %s\n", d->pci_driver[0] ? d->pci_driver : "unknown");
	if (d->udev_syspath[0])
		fs_put(t, "syspath: %s\n", d->udev_syspath);
	for (size_t i = 0; i < d->n_card_nodes; i++)
		fs_put(t, "node: %s c %u:%u\n", d->card_nodes[i].path, d->card_nodes[i].major, d->card_nodes[i].minor);
	fs_put(t, "state: %s%s%s\n", accel_device_state_str(d), d->refused ? ": " : "", d->refused ? d->refusal : "");
}

void fs_device_holders_text(struct fs_text *t, struct accel_node *node, const struct accel_device *d)
{
	struct accel_control_holder *c;
	struct accel_proc_gate g;
	struct accel_holder *h;
	char lead[160];
	size_t n;

	fs_text_proc_gate(t, &g);
	if (accel_node_holders(node, d->name, &h, &n))
		return;
	for (size_t i = 0; i < n; i++)
		fs_put_holder(t, &g, "", &h[i]);
	free(h);
	/* Who holds the nodes every card shares, by node: shown, though on NVIDIA they do not hold the card. */
	if (accel_node_control_holders(node, d->name, &c, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		snprintf(lead, sizeof(lead), "control node=%s ", c[i].node);
		fs_put_holder(t, &g, lead, &c[i].h);
	}
	free(c);
}

void fs_profile_info_text(struct fs_text *t, const struct accel_profile *p)
{
	char placements[256];

	accel_ledger_format(p->placements, p->n_placements, placements, sizeof(placements));
	fs_put(t, "name: %s\n", p->name);
	fs_put(t, "driver_name: %s\n", p->vendor_name);
	fs_put(t, "driver_display_name: %s\n", p->driver_name);
	fs_put(t, "profile_id: %u\n", p->id);
	fs_put(t, "memory_slices: %u\n", p->span);
	fs_put(t, "memory_mib: %llu\n", p->memory_mib);
	fs_put(t, "compute_slices: %u\n", p->slice_count);
	fs_put(t, "multiprocessors: %u\n", p->multiprocessors);
	fs_put(t, "copy_engines: %u\n", p->copy_engines);
	fs_put(t, "decoders: %u\n", p->decoders);
	fs_put(t, "encoders: %u\n", p->encoders);
	fs_put(t, "jpeg: %u\n", p->jpegs);
	fs_put(t, "ofa: %u\n", p->ofas);
	fs_put(t, "placements: %s\n", placements);
	fs_put(t, "capacity: %u\n", accel_ledger_capacity(p->n_placements));
}
