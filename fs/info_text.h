/* SPDX-License-Identifier: MIT */
/*
 * The texts of a card's info and holders files and of a profile's info (their rows are in fs/tree_files.c).  Pure formatting of
 * what they are given; holders alone asks /proc (a live row, fs/tree.h).
 */
#ifndef ACCELFS_INFO_TEXT_H
#define ACCELFS_INFO_TEXT_H

#include "core/model/model.h"
#include "fs/text.h"

struct accel_node;

/* <dev>/info: who the card is. */
void fs_device_info_text(struct fs_text *t, const struct accel_device *d);
/* <dev>/holders: the processes holding the card's nodes, from /proc now (a live row). */
void fs_device_holders_text(struct fs_text *t, struct accel_node *node, const struct accel_device *d);
/* <dev>/mig/<profile>/info. */
void fs_profile_info_text(struct fs_text *t, const struct accel_profile *p);

#endif
