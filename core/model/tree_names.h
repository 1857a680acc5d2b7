/* SPDX-License-Identifier: MIT */
/*
 * The names of the files the tree (fs/tree_files.c) puts beside names that
 * come from elsewhere: a profile directory may not be called like a file of
 * <dev>/mig/, a job like a file of its profile directory (the device's or
 * the node-level one) or of a placement's directory (placements/<start>/,
 * where the job shows too).  Core refuses those names from this one list;
 * tests/service/test_render.c checks that fs/tree_files.c's rows are
 * exactly these.
 */
#ifndef ACCEL_TREE_NAMES_H
#define ACCEL_TREE_NAMES_H

#define ACCEL_MIG_FILE_NAMES                                                                                           \
	"mode", "instances", "map", "layout", "layout_status", "cordon", "foreign", "adopt", "last_error"
#define ACCEL_NODE_PROFILE_FILE_NAMES "info", "available", "last_error"
#define ACCEL_PROFILE_FILE_NAMES ACCEL_NODE_PROFILE_FILE_NAMES, "placements"
#define ACCEL_PLACEMENT_FILE_NAMES "status"

#endif
