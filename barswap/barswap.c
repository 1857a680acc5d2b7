/* SPDX-License-Identifier: MIT */
/*
 * The original barswap project's userspace API (barswap.h) over the slot seam (bs_slot.h).
 *
 * A context is one slot handle (one open file of /dev/bar_swap, or one
 * simulated handle) plus, per die, the bs_gpu the caller was given, so that
 * pointers handed out stay valid for the life of the context.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "barswap/bs_slot.h"

/* The module's limit (BAR_SWAP_MAX_DIES) and the simulator's. */
#define BS_CTX_MAX_DIES 64

struct bs_context {
	struct bs_slot *slot;
	pthread_mutex_t lock; /* num_dies */
	uint32_t num_dies;
	uint32_t num_slots;
	bs_gpu gpus[BS_CTX_MAX_DIES];
};

/* errno convention of the API: -1 (or NULL) with errno set. */
static int fail(int neg_errno)
{
	errno = -neg_errno;
	return -1;
}

bs_context *bs_init_slot(struct bs_slot *s)
{
	bs_context *ctx;
	bs_status st;
	int ret;

	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	ret = bs_slot_query(s, &st);
	if (ret) {
		bs_slot_close(s);
		errno = -ret;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		bs_slot_close(s);
		errno = ENOMEM;
		return NULL;
	}
	ctx->slot = s;
	ctx->num_dies = st.num_dies;
	ctx->num_slots = st.num_slots;
	for (int i = 0; i < BS_CTX_MAX_DIES; i++)
		ctx->gpus[i].die_id = i;
	pthread_mutex_init(&ctx->lock, NULL);
	return ctx;
}

bs_context *bs_init_path(const char *path)
{
	int err;
	struct bs_slot *s = bs_slot_kmod_open(path, &err);

	if (!s) {
		errno = -err;
		return NULL;
	}
	return bs_init_slot(s);
}

bs_context *bs_init(void)
{
	return bs_init_path(BS_DEVICE);
}

uint32_t bs_num_dies(bs_context *ctx)
{
	uint32_t n;

	pthread_mutex_lock(&ctx->lock);
	n = ctx->num_dies;
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

uint32_t bs_num_slots(bs_context *ctx)
{
	return ctx->num_slots;
}

int bs_refresh(bs_context *ctx)
{
	bs_status st;
	int ret = bs_slot_query(ctx->slot, &st);

	if (ret)
		return fail(ret);
	pthread_mutex_lock(&ctx->lock);
	ctx->num_dies = st.num_dies;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int bs_query(bs_context *ctx, bs_status *out)
{
	int ret = bs_slot_query(ctx->slot, out);

	return ret ? fail(ret) : 0;
}

int bs_die_info_get(bs_context *ctx, int die_id, bs_die_info *out)
{
	int ret = die_id < 0 ? -EINVAL : bs_slot_die_info(ctx->slot, (uint32_t)die_id, out);

	return ret ? fail(ret) : 0;
}

bs_gpu *bs_acquire_ex(bs_context *ctx, int die_id, unsigned flags, uint32_t timeout_ms)
{
	uint64_t size = 0;
	void *vram;
	int ret;

	if (die_id < 0 || die_id >= BS_CTX_MAX_DIES || (flags & ~BS_NONBLOCK)) {
		errno = EINVAL;
		return NULL;
	}
	ret = bs_slot_acquire(ctx->slot, (uint32_t)die_id, flags, timeout_ms, &size);
	if (!ret) {
		ret = bs_slot_window(ctx->slot, (uint32_t)die_id, &vram);
		if (ret) /* held but unusable: give it back rather than sit on it */
			bs_slot_release(ctx->slot);
	}
	if (ret) {
		errno = -ret;
		return NULL;
	}
	ctx->gpus[die_id].vram = vram;
	ctx->gpus[die_id].vram_size = size;
	return &ctx->gpus[die_id];
}

bs_gpu *bs_acquire(bs_context *ctx, int die_id)
{
	return bs_acquire_ex(ctx, die_id, 0, 0);
}

int bs_release_ex(bs_context *ctx, bs_gpu *gpu)
{
	int ret;

	(void)gpu; /* ownership belongs to the context: there is one slot to vacate */
	ret = bs_slot_release(ctx->slot);
	return ret ? fail(ret) : 0;
}

void bs_release(bs_context *ctx, bs_gpu *gpu)
{
	int saved = errno;

	bs_release_ex(ctx, gpu);
	errno = saved;
}

int bs_active_die(bs_context *ctx)
{
	bs_status st;

	return bs_slot_query(ctx->slot, &st) ? -1 : st.active_die;
}

int bs_is_mapped(bs_context *ctx, int die_id)
{
	bs_status st;

	if (bs_slot_query(ctx->slot, &st))
		return 0;
	return st.owner && !st.revoked && st.active_die == die_id;
}

int bs_set_enabled(bs_context *ctx, int die_id, int enabled)
{
	int ret = die_id < 0 || (enabled != 0 && enabled != 1)
	                  ? -EINVAL
	                  : bs_slot_set_enabled(ctx->slot, (uint32_t)die_id, enabled);

	return ret ? fail(ret) : 0;
}

const char *bs_backend(bs_context *ctx)
{
	return ctx->slot->ops->backend;
}

int bs_lend(bs_context *ctx, bs_gpu *gpu, const char *driver)
{
	int ret = !gpu || gpu->die_id < 0 || !driver ? -EINVAL : bs_slot_lend(ctx->slot, (uint32_t)gpu->die_id, driver);

	return ret ? fail(ret) : 0;
}

int bs_return_ex(bs_context *ctx, bs_gpu *gpu, unsigned flags)
{
	int ret = !gpu || gpu->die_id < 0 || (flags & ~BS_NONBLOCK)
	                  ? -EINVAL
	                  : bs_slot_return(ctx->slot, (uint32_t)gpu->die_id, flags);

	return ret ? fail(ret) : 0;
}

int bs_return(bs_context *ctx, bs_gpu *gpu)
{
	return bs_return_ex(ctx, gpu, 0);
}

int bs_die_lend_get(bs_context *ctx, int die_id, bs_die_lend *out)
{
	int ret = die_id < 0 ? -EINVAL : bs_slot_die_lend(ctx->slot, (uint32_t)die_id, out);

	return ret ? fail(ret) : 0;
}

int bs_set_policy(bs_context *ctx, int die_id, int policy)
{
	int ret = die_id < 0 || (policy != BS_POLICY_PINNED && policy != BS_POLICY_RESIDENT)
	                  ? -EINVAL
	                  : bs_slot_set_policy(ctx->slot, (uint32_t)die_id, (uint32_t)policy);

	return ret ? fail(ret) : 0;
}

int bs_set_lease(bs_context *ctx, uint32_t lease_ms)
{
	int ret = bs_slot_set_lease(ctx->slot, lease_ms);

	return ret ? fail(ret) : 0;
}

int bs_lease_get(bs_context *ctx, bs_lease_info *out)
{
	int ret = bs_slot_lease(ctx->slot, out);

	return ret ? fail(ret) : 0;
}

int bs_queue(bs_context *ctx, bs_queue_entry *out, uint32_t max, uint32_t *total)
{
	int ret = bs_slot_queue(ctx->slot, out, max, total);

	return ret < 0 ? fail(ret) : ret;
}

void bs_free(bs_context *ctx)
{
	if (!ctx)
		return;
	bs_slot_close(ctx->slot); /* closing the handle releases the slot */
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}
