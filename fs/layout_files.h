/* SPDX-License-Identifier: MIT */
/*
 * A card's layout files and the writes of <dev>/mig/ (fs/layout_files.c):
 *
 *   layout         the declared layout (core/policy/layout.h); root writes it whole
 *   layout_status  per declared line: applied, pending: <why>, impossible: <why>
 *   cordon         1: no new job lands on the card but the layout's; root writes 0 or 1
 *   mode           root writes enabled or disabled (core/engine/node_mode.c's preconditions)
 *   last_error     why the last write here failed
 */
#ifndef ACCELFS_LAYOUT_FILES_H
#define ACCELFS_LAYOUT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "fs/tree.h"

struct accelfs;
struct fs_text;

/* mig/mode: "enabled", "disabled", or "enabled (pending: disabled)" while the driver holds a change pending. */
int fs_mig_mode_render(struct fs_text *t, const struct fs_view *v);
int fs_layout_render(struct fs_text *t, const struct fs_view *v);
int fs_layout_status_render(struct fs_text *t, const struct fs_view *v);
int fs_cordon_render(struct fs_text *t, const struct fs_view *v);
int fs_mig_last_error_render(struct fs_text *t, const struct fs_view *v);

/* Is n <dev>/mig/cordon, mode, foreign, adopt or <dev>/health (written by root and the card's delegate)? */
bool fs_layout_writes(const struct fs_node *n);
/* Is n <dev>/mig/layout (its writer is the device's delegate too)? */
bool fs_layout_deferred(const struct fs_node *n);
struct fs_deferred;
/*
 * The layout's writes, a line at a time (fs/deferred.h): each is checked
 * with what came before (-EINVAL at the write that brings a bad line, and
 * the handle applies nothing); the writer's close applies the whole.
 */
int fs_layout_write_part(struct accelfs *fs, const struct fs_node *n, uid_t uid, gid_t gid,
                         struct fs_deferred **pending, const char *buf, size_t size, off_t off);
/* The layout row's write: fs_layout_write_part on the handle's kept text (w->pending). */
int fs_layout_text_write(struct fs_write *w, const struct fs_node *n);
/* The write of cordon and mode (their rows'): the bytes taken, or -errno (last_error of <dev>/mig and the log say why). */
int fs_mig_setting_write(struct fs_write *w, const struct fs_node *n);
/*
 * <dev>/health's write: `ok` or `clear` acknowledges the card's failure
 * (accel_node_health_ack); root and the card's delegate.  The bytes taken,
 * or -errno (last_error of <dev>/mig and the log say why).
 */
int fs_health_ack_write(struct fs_write *w, const struct fs_node *n);
/* <dev>/health's row: rendered from the snapshot, written by fs_health_ack_write. */
#define FS_DEVICE_HEALTH_ROW(render_fn)                                                                                \
	{                                                                                                              \
		.name = "health", .kind = FS_FILE, .fresh = FS_FRESH_SNAPSHOT, .mode = 0644,                           \
		.flags = FS_ENTRY_CACHED | FS_ENTRY_WRITABLE, .render = (render_fn), .write = fs_health_ack_write      \
	}

/*
 * Who may write a card's layout, cordon and mode besides root: the owner of
 * the nearest delegated directory of the device (chown of ppu3/, or of the
 * whole tree), as attr.c shows on those files.  false: root alone.
 */
bool fs_layout_owner(struct accelfs *fs, const char *device, uid_t *uid, gid_t *gid);

/* The attachments' answer to "is this job held" (ctx: the mount's registry). */
bool fs_layout_held(void *ctx, const struct accel_device *d, const struct accel_job *j, char *why, size_t whylen);

/*
 * The mount's layouts: opened and applied once (unless read-only) before the
 * mount serves, the thread started once the notifier runs, kicked at every
 * published change, closed before the node stops.  on_change (ctx: fs):
 * a layout_status or cordon changed (main.c wakes the waiters).
 */
int fs_layouts_open(struct accelfs *fs, const char *state_dir, unsigned poll_ms, bool read_only,
                    void (*on_change)(void *ctx));
int fs_layouts_start(struct accelfs *fs);
void fs_layouts_kick(struct accelfs *fs);
void fs_layouts_close(struct accelfs *fs);

#endif
