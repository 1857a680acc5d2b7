/* SPDX-License-Identifier: MIT */
/*
 * What a card can take now (struct accel_admits, core/model/model.h), decided from
 * its view alone (core/policy/admits.c): a pure function of the view, called by the
 * node as it installs a view and as mkdir checks the card.
 */
#ifndef ACCEL_ADMITS_H
#define ACCEL_ADMITS_H

#include <stdbool.h>

#include "core/model/model.h"

/*
 * Decide v->admits from v (absent, refused, mode, health) and v->hold, and
 * set every profile's available to its free count, or 0 when no job is
 * taken.  Called on every view as it is installed.
 */
void accel_device_admission(struct accel_device *v);
/*
 * May job (a layout's own, or not) be carved on d now?  0, or the errno
 * with d->admits.why.  A layout's jobs pass the holds a layout makes or
 * waits under (cordon, drain, a pending mode); nothing passes the rest.
 */
int accel_device_admits_job(const struct accel_device *d, bool layout_job);

#endif
