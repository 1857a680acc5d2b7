/* SPDX-License-Identifier: MIT */
/*
 * A card's health book on disk: <state_dir>/health/<card uuid>.json, one
 * durable write per batch of events, so that a daemon killed in the middle
 * of anything shows, once started again, every fault it had shown (what
 * the driver reports since is then laid over it: core/engine/node_health.c).
 */
#ifndef ACCEL_HEALTH_STORE_H
#define ACCEL_HEALTH_STORE_H

#include <stddef.h>

#include "core/state/health_book.h"

/* 0 or -errno with a message; a missing file is an empty book (0). */
int accel_health_store_load(const char *state_dir, const char *card_uuid, struct accel_health_book *b, char *why,
                            size_t whylen);
int accel_health_store_save(const char *state_dir, const char *card_uuid, const struct accel_health_book *b, char *why,
                            size_t whylen);

#endif
