/* SPDX-License-Identifier: MIT */
/*
 * The names of the files the tree (fs/tree_files.c) puts beside names that
 * come from elsewhere: a profile directory may not be called like a file of
 * <dev>/mig/, a job like a file of its profile directory.  Core refuses
 * those names from this one list; tests/service/test_render.c checks that
 * fs/tree_files.c's rows are exactly these.
 */
#ifndef ACCEL_TREE_NAMES_H
#define ACCEL_TREE_NAMES_H

#define ACCEL_MIG_FILE_NAMES "mode", "instances", "map"
#define ACCEL_PROFILE_FILE_NAMES "info", "available", "last_error"

#endif
