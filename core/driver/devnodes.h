/* SPDX-License-Identifier: MIT */
/*
 * The device nodes a partition needs, proven rather than assumed.
 *
 * Capability minors are read from the driver's live procfs record at the
 * moment they are needed (never cached, never computed: they are large,
 * unlike the instance ids, and promised by no contract).  Every node is
 * stat'ed: it must exist, be a character device and carry the expected
 * minor.  The card node's minor must equal the minor the driver reports for
 * the card, which confirms the ordinal in its path still addresses it.
 */
#ifndef ACCEL_DEVNODES_H
#define ACCEL_DEVNODES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/driver/card.h"
#include "core/model/model.h"

/* The directory of a card's capability records, e.g. /proc/driver/alixpu/capabilities/ppu3/mig. */
int accel_caps_dir(const struct accel_card *card, char *buf, size_t len);

/* DeviceFileMinor of gi<G>/access (ci < 0) or gi<G>/ci<C>/access. */
int accel_cap_minor(const struct accel_card *card, unsigned gi, int ci, unsigned *minor, char *why, size_t whylen);

/*
 * Stat dev_root/rel and fill node.  want_minor < 0: any minor.  Fails with
 * -ENOENT (missing), -EINVAL (not a character device) or
 * -EXDEV (wrong minor), each with a reason.
 */
int accel_node_check(const struct accel_card *card, const char *rel, long want_minor, struct accel_devnode *node,
                     char *why, size_t whylen);

/* The card's own nodes: control nodes, the card node, optional nodes present. */
int accel_card_nodes(const struct accel_card *card, struct accel_devnode **out, size_t *n, char *why, size_t whylen);

/* A job's full set: the card's nodes plus the GI and CI capability nodes. */
int accel_job_nodes(const struct accel_card *card, unsigned gi, unsigned ci, struct accel_devnode **out, size_t *n,
                    char *why, size_t whylen);

#endif
