/* SPDX-License-Identifier: MIT */
/*
 * What both the slot's operations (bs_sim.c) and lending (bs_sim_lend_ops.c)
 * need: a handle's window on the dies' memory, kept to what it may touch, and
 * the privilege check the module makes.  Apart from both, so that neither
 * calls the other back.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sim/barswap/bs_sim_slot.h"
#include "sim/barswap/bs_sim_state.h"

/* Under local: map die's file (PROT_NONE) if not yet. */
int ensure_region(struct sim_slot *s, uint32_t die)
{
	struct region *r = &s->region[die];
	char path[PATH_MAX];
	void *m;
	int fd;

	if (r->addr)
		return 0;
	r->size = s->st.sh->dies[die].vram_size;
	bs_sim_die_path(s->st.dir, die, path, sizeof(path));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	m = mmap(NULL, r->size, PROT_NONE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	r->addr = m;
	return 0;
}

/*
 * Under the state lock: make exactly the owned die's region accessible, if
 * any.  Not a lent die's: its memory is its driver's then.
 */
int sync_protection(struct sim_slot *s)
{
	struct sim_shared *sh = s->st.sh;
	int want = sh->owner == s->id && sh->active >= 0 && sh->dies[sh->active].lend == BS_LEND_NONE ? sh->active : -1;
	int ret = 0;

	pthread_mutex_lock(&s->local);
	if (s->owned != want) {
		if (s->owned >= 0)
			mprotect(s->region[s->owned].addr, s->region[s->owned].size, PROT_NONE);
		s->owned = -1;
		if (want >= 0) {
			ret = ensure_region(s, (uint32_t)want);
			if (!ret && mprotect(s->region[want].addr, s->region[want].size, PROT_READ | PROT_WRITE))
				ret = -errno;
			if (!ret)
				s->owned = want;
		}
	}
	pthread_mutex_unlock(&s->local);
	return ret;
}

bool has_cap_sys_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective & CAP_TO_MASK(CAP_SYS_ADMIN);
}
