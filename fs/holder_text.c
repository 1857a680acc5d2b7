/* SPDX-License-Identifier: MIT */
#include "fs/holder_text.h"

void fs_text_proc_gate(const struct fs_text *t, struct accel_proc_gate *g)
{
	accel_proc_gate_for("/proc", t->reader, g);
}

void fs_put_holder(struct fs_text *t, const struct accel_proc_gate *g, const char *lead, const struct accel_holder *h)
{
	bool shown = accel_proc_gate_lets(g, &h->owner);

	/* The pid and the count stay: that the card is held, and by how many, is what the file is for. */
	fs_put(t, "%spid=%d command=%s fds=%u cmdline=%s\n", lead, (int)h->pid, shown ? h->comm : "hidden", h->nfds,
	       shown ? h->cmdline : "hidden");
}
