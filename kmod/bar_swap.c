// SPDX-License-Identifier: GPL-2.0
/*
 * bar_swap: many GPU dies, one CPU-visible BAR slot.
 *
 * The barswap board can route only one die's VRAM BAR into CPU address space
 * at a time.  This driver binds the dies (so no GPU driver probes them in
 * their broken-BAR state), keeps every die parked (memory decode off), and
 * lends the one slot to one open file of /dev/bar_swap at a time:
 *
 *   ACQUIRE  queue (strict FIFO) until the slot is free, then put the die
 *            in it: decode on, and in slot mode the die's BAR moved to the
 *            slot address.
 *   RELEASE  zap every user mapping of the slot, park the die, hand the slot
 *            to the next waiter.  close() and process death do the same.
 *   mmap     maps the slot lazily: the fault handler inserts the PFNs of the
 *            die the file owns *now*, or raises SIGBUS.  Every change of
 *            owner or die first zaps all mappings of the one address_space
 *            shared by all openers, so a stale mapping can never reach the
 *            next die.  Clearing memory decode alone does not revoke a
 *            mapping (a stale read just returns junk), the zap does.
 *
 *   LEND     hand the die in the slot to a GPU driver from the lend_drivers=
 *            allowlist (driver_override + probe), the slot pinned to it;
 *   RETURN   take it back (the driver unbinds, bar_swap binds it again).
 *            Under the PINNED policy the owner's release, close or death
 *            returns it before the slot moves on; under RESIDENT it stays
 *            with the driver and is only parked and put back.
 *   lease    while others wait, an owner keeps the slot at most lease_ms;
 *            then a pinned lent die comes back first and the owner is
 *            revoked (mappings zapped, RELEASE says ETIME).
 *
 * Locking:
 *   bs.lock (mutex)       dies[], the queue, owner/active, counters, lending.
 *   bs.map_lock (rwsem)   faults take it for read; owner/active change only
 *                         with bs.lock and map_lock held for write, after
 *                         the zap.  Order: mmap_lock -> map_lock (faults),
 *                         bs.lock -> map_lock -> i_mmap_rwsem (zaps).  So
 *                         never touch user memory with bs.lock held.
 *   The driver core (device_lock, probe, remove) is only ever called with
 *   bs.lock dropped: bs_probe() and bs_remove() take it themselves.
 *
 * Dies without hardware: sim_dies=N creates RAM-backed dies whose pages are
 * allocated on first touch, so the whole stack can be tried in any VM.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mount.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/pid.h>
#include <linux/pseudo_fs.h>
#include <linux/rwsem.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "bar_swap_uapi.h"

/* ---- compat: APIs that moved between 6.1 and mainline ---- */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;	/* 6.3 made vm_flags read-only behind helpers */
}
#endif

#define BS_FS_MAGIC	0x62737770	/* "bswp" */
#define BS_PREFAULT	(2UL << 20)	/* map a PCI die 2 MiB per fault */
#define BS_MAX_STRUCT	PAGE_SIZE	/* largest ioctl struct we will scan */
#define BS_MAX_QUEUE	256		/* most waiters one QUEUE call reports */
#define BS_RETURN_WARN_MS 1000		/* a return this slow is logged: the driver holds on */

/* ---- parameters ---- */
static char *ids;
module_param(ids, charp, 0444);
MODULE_PARM_DESC(ids, "extra PCI ids to bind, \"vendor:device[:subvendor:subdevice[:class:class_mask]]\" in hex, comma separated (as pci-stub)");

static unsigned int sim_dies;
module_param(sim_dies, uint, 0444);
MODULE_PARM_DESC(sim_dies, "number of RAM-backed simulated dies (no hardware)");

static char *sim_size = "64M";
module_param(sim_size, charp, 0444);
MODULE_PARM_DESC(sim_size, "VRAM size of each simulated die (K/M/G suffixes; pages are allocated on first touch)");

static int vram_bar = -1;
module_param(vram_bar, int, 0444);
MODULE_PARM_DESC(vram_bar, "which BAR is the VRAM (default -1: the largest memory BAR)");

static unsigned long long slot_addr;
module_param(slot_addr, ullong, 0444);
MODULE_PARM_DESC(slot_addr, "physical address of the one slot: the active die's VRAM BAR is moved there (default 0: each die decodes at its own BAR)");

static bool takeover = true;
module_param(takeover, bool, 0444);
MODULE_PARM_DESC(takeover, "at load, take matching devices away from pci-stub (default on)");

static char *disable;
module_param(disable, charp, 0444);
MODULE_PARM_DESC(disable, "bus ids of dies to bind but keep quarantined, comma separated (e.g. 0000:03:00.0,sim:2)");

/* Writable at run time (/sys/module/bar_swap/parameters/lend_drivers): read under kernel_param_lock. */
static char *lend_drivers;
module_param(lend_drivers, charp, 0644);
MODULE_PARM_DESC(lend_drivers, "PCI drivers a slot owner may lend its die to, comma separated (default: none)");

static unsigned int lease_ms;
module_param(lease_ms, uint, 0444);
MODULE_PARM_DESC(lease_ms, "initial lease in ms: while others wait, an owner keeps the slot at most this long (default 0: no lease; BAR_SWAP_IOC_SET_LEASE changes it)");

/* ---- state ---- */
struct bs_die {
	unsigned int index;
	bool present;		/* bound (PCI) or alive (sim) */
	bool enabled;		/* not quarantined */
	bool mappable;		/* has a usable VRAM window */
	bool sim;
	struct pci_dev *pdev;	/* NULL for sim dies and after unbind */
	int bar;
	bool bar64;
	u32 bar_orig[2];	/* BAR registers as found, restored on unbind */
	bool region, wc;	/* resources held while bound */
	phys_addr_t phys;	/* where VRAM decodes while active */
	u64 size;
	u16 vendor, device;
	u64 acquires;
	char bus_id[BAR_SWAP_BUS_ID_LEN];
	struct xarray pages;	/* sim: VRAM pages, allocated on first touch */
	/* lending (see "lend" below) */
	bool resident;		/* policy: stays with its driver when the slot moves on */
	u32 lend;		/* BAR_SWAP_LEND_* */
	char driver[BAR_SWAP_DRIVER_LEN];	/* the borrower, while lent */
	struct pid *lender;
	const char *saved_override;	/* driver_override before the lend */
	struct resource saved_res;	/* slot mode: the BAR's resource before the lend */
	bool res_moved, res_had_parent;
};

struct bs_file {
	bool queued;		/* a thread waits in ACQUIRE on this file */
	int revoked;		/* lost the slot: ENODEV (unbind/disable) or ETIME (lease) */
};

struct bs_waiter {
	struct list_head node;
	struct bs_file *bf;
	struct bs_die *die;
	struct pid *pid;
	ktime_t since;
	struct completion done;
	bool granted;
	int err;
};

static struct {
	struct mutex lock;
	struct rw_semaphore map_lock;
	struct bs_die *dies[BAR_SWAP_MAX_DIES];
	unsigned int num_dies;
	struct bs_file *owner;		/* write: lock + map_lock */
	struct bs_die *active;		/* write: lock + map_lock */
	struct pid *owner_pid;
	struct list_head queue;
	unsigned int waiters, open_files;
	u64 swaps;
	struct vfsmount *mnt;
	struct inode *inode;		/* its i_mapping is every opener's f_mapping */
	/* the lease */
	unsigned int lease_ms;
	ktime_t contended_since;	/* 0: the lease does not run */
	struct delayed_work lease_work;
	/* lending: at most one die is on its way back at a time (the active one) */
	bool leaving;			/* the owner let go of a pinned lent die */
	bool expired;			/* the owner's lease ran out while its die was lent */
	struct bs_die *returning;
	ktime_t return_start;
	bool return_warned;
	struct work_struct return_work;
	struct workqueue_struct *wq;	/* returns wait for drivers: never on system_wq */
	wait_queue_head_t lend_wq;	/* RETURN waits here */
} bs = {
	.lock = __MUTEX_INITIALIZER(bs.lock),
	.map_lock = __RWSEM_INITIALIZER(bs.map_lock),
	.queue = LIST_HEAD_INIT(bs.queue),
	.lend_wq = __WAIT_QUEUE_HEAD_INITIALIZER(bs.lend_wq),
};

static void bs_lease_update(void);
static void bs_start_return(struct bs_die *d);

static bool die_usable(const struct bs_die *d)
{
	return d->present && d->enabled && d->mappable;
}

/* "a,b,c" contains id? */
static bool in_list(const char *list, const char *id)
{
	size_t n = strlen(id);

	while (list && *list) {
		if (!strncmp(list, id, n) && (list[n] == ',' || !list[n]))
			return true;
		list = strchr(list, ',');
		if (list)
			list++;
	}
	return false;
}

/* ---- putting a die into the slot and taking it out ---- */
static void die_write_bar(struct bs_die *d, u32 lo, u32 hi)
{
	int reg = PCI_BASE_ADDRESS_0 + 4 * d->bar;

	pci_write_config_dword(d->pdev, reg, lo);
	if (d->bar64)
		pci_write_config_dword(d->pdev, reg + 4, hi);
}

static void die_decode(struct bs_die *d, bool on)
{
	u16 cmd;

	pci_read_config_word(d->pdev, PCI_COMMAND, &cmd);
	cmd = on ? cmd | PCI_COMMAND_MEMORY : cmd & ~PCI_COMMAND_MEMORY;
	pci_write_config_word(d->pdev, PCI_COMMAND, cmd);
}

static void die_park(struct bs_die *d)
{
	if (d->pdev)
		die_decode(d, false);
}

static void die_activate(struct bs_die *d)
{
	if (!d->pdev)
		return;
	/* Decode is off here, so moving the BAR cannot briefly alias anything. */
	if (slot_addr)
		die_write_bar(d, lower_32_bits(slot_addr), upper_32_bits(slot_addr));
	die_decode(d, true);
}

/*
 * Give the slot to (bf, die) on behalf of pid, or empty it (NULL, NULL).
 * The zap comes first and holds map_lock for write, so in-flight faults
 * finish against the old state and later ones see the new one.
 */
static void bs_switch(struct bs_file *bf, struct bs_die *die, struct pid *pid)
{
	lockdep_assert_held(&bs.lock);
	down_write(&bs.map_lock);
	unmap_mapping_range(bs.inode->i_mapping, 0, 0, 1);
	if (bs.active && bs.active != die)
		die_park(bs.active);
	if (die && die != bs.active)
		die_activate(die);
	if (die) {
		die->acquires++;
		bs.swaps++;
	}
	bs.owner = bf;
	bs.active = die;
	put_pid(bs.owner_pid);
	bs.owner_pid = get_pid(pid);
	up_write(&bs.map_lock);
	/* A new tenure: a new lease, running at once if others wait already. */
	bs.leaving = false;
	bs.expired = false;
	bs.contended_since = 0;
	bs_lease_update();
}

/* The owner's mappings go and it owns nothing; the active die stays where it is. */
static void bs_disown(void)
{
	lockdep_assert_held(&bs.lock);
	down_write(&bs.map_lock);
	unmap_mapping_range(bs.inode->i_mapping, 0, 0, 1);
	bs.owner = NULL;
	put_pid(bs.owner_pid);
	bs.owner_pid = NULL;
	up_write(&bs.map_lock);
}

/* Nobody owns the slot and no lent die is on its way back to it. */
static bool bs_slot_free(void)
{
	return !bs.owner && !bs.leaving && !bs.returning;
}

static bool die_pins_slot(const struct bs_die *d)
{
	return d && d->lend != BAR_SWAP_LEND_NONE &&
	       !(d->lend == BAR_SWAP_LEND_LENT && d->resident);
}

static void bs_vacate(void);

/*
 * The owner leaves (release, close, revocation).  A die lent under the
 * pinned policy comes back to bar_swap first: the slot moves on only then
 * (bs_return_done).  A resident one stays with its driver, parked.
 */
static void bs_leave(void)
{
	struct bs_die *d = bs.active;

	lockdep_assert_held(&bs.lock);
	if (die_pins_slot(d)) {
		bs_disown();
		bs.leaving = true;
		if (d->lend == BAR_SWAP_LEND_LENT)
			bs_start_return(d);
		return;
	}
	bs_vacate();
}

/* The owner leaves: hand the slot to the first waiter whose die is usable. */
static void bs_vacate(void)
{
	struct bs_waiter *w, *tmp;

	lockdep_assert_held(&bs.lock);
	list_for_each_entry_safe(w, tmp, &bs.queue, node) {
		list_del_init(&w->node);
		bs.waiters--;
		if (!die_usable(w->die)) {
			w->err = -ENODEV;
		} else {
			bs_switch(w->bf, w->die, w->pid);
			w->granted = true;
		}
		/* Under bs.lock: the waiter's stack frame lives until it gets the lock. */
		complete(&w->done);
		if (w->granted)
			return;
	}
	bs_switch(NULL, NULL, NULL);
}

/* The die just became unusable: fail its waiters, take it from its owner. */
static void bs_revoke_die(struct bs_die *d)
{
	struct bs_waiter *w, *tmp;

	lockdep_assert_held(&bs.lock);
	list_for_each_entry_safe(w, tmp, &bs.queue, node) {
		if (w->die != d)
			continue;
		list_del_init(&w->node);
		bs.waiters--;
		w->err = -ENODEV;
		complete(&w->done);
	}
	if (bs.active == d) {
		pr_info("die %u revoked from pid %d\n", d->index, pid_nr(bs.owner_pid));
		if (bs.owner)
			bs.owner->revoked = ENODEV;
		bs_vacate();
	}
	bs_lease_update();
}

/* ---- the lease ---- */

/*
 * The lease runs while someone owns the slot and others wait, from the
 * later of the grant and the first waiter's arrival.  Called under bs.lock
 * after every change of owner or queue.
 */
static bool bs_lease_runs(void)
{
	return bs.lease_ms && bs.owner && !list_empty(&bs.queue) && !bs.expired &&
	       !bs.leaving;
}

static ktime_t bs_lease_deadline(void)
{
	return ktime_add_ms(bs.contended_since, bs.lease_ms);
}

/* One timer for two things: the lease's deadline, and the log line of a return that takes long. */
static void bs_timer_arm(void)
{
	ktime_t now = ktime_get();
	s64 next = S64_MAX;

	if (bs_lease_runs() && bs.contended_since)
		next = ktime_ms_delta(bs_lease_deadline(), now);
	if (bs.returning && !bs.return_warned)
		next = min_t(s64, next, BS_RETURN_WARN_MS - ktime_ms_delta(now, bs.return_start));
	if (next != S64_MAX)
		mod_delayed_work(system_wq, &bs.lease_work,
				 next > 0 ? msecs_to_jiffies(next) + 1 : 0);
}

static void bs_lease_update(void)
{
	lockdep_assert_held(&bs.lock);
	if (!bs_lease_runs())
		bs.contended_since = 0;	/* a pending work finds nothing to do */
	else if (!bs.contended_since)
		bs.contended_since = ktime_get();
	bs_timer_arm();
}

static s32 bs_lease_left_ms(void)
{
	s64 left;

	if (!bs_lease_runs() || !bs.contended_since)
		return -1;
	left = ktime_ms_delta(bs_lease_deadline(), ktime_get());
	return left > 0 ? (s32)min_t(s64, left, S32_MAX) : 0;
}

/* The owner's lease ran out. */
static void bs_expire(void)
{
	struct bs_die *d = bs.active;

	bs.contended_since = 0;
	bs.expired = true;
	if (die_pins_slot(d)) {
		/* A lease never takes a die from a driver: it asks for it back and waits. */
		pr_info("die %u: lease of %u ms expired for pid %d with %u waiting; returning it from %s first\n",
			d->index, bs.lease_ms, pid_nr(bs.owner_pid), bs.waiters,
			d->driver);
		if (d->lend == BAR_SWAP_LEND_LENT)
			bs_start_return(d);
		return;		/* bs_return_done() revokes the owner once it is back */
	}
	pr_info("die %u: lease of %u ms expired; revoked from pid %d, %u waiting\n",
		d ? d->index : 0, bs.lease_ms, pid_nr(bs.owner_pid), bs.waiters);
	bs.owner->revoked = ETIME;
	bs_vacate();
}

static void bs_lease_fn(struct work_struct *work)
{
	mutex_lock(&bs.lock);
	if (bs.returning && !bs.return_warned &&
	    ktime_ms_delta(ktime_get(), bs.return_start) >= BS_RETURN_WARN_MS) {
		bs.return_warned = true;
		pr_warn("die %u: %s has not let go after %lld ms; the slot waits for it%s\n",
			bs.returning->index, bs.returning->driver,
			ktime_ms_delta(ktime_get(), bs.return_start),
			bs.expired ? " (the lease expired, but a lease never takes a die from a driver)" : "");
	}
	if (bs_lease_runs() && bs.contended_since &&
	    ktime_compare(ktime_get(), bs_lease_deadline()) >= 0)
		bs_expire();
	bs_timer_arm();
	mutex_unlock(&bs.lock);
}


static u64 bs_slot_size(void)
{
	u64 max = 0;
	unsigned int i;

	for (i = 0; i < bs.num_dies; i++)
		if (bs.dies[i]->present && bs.dies[i]->mappable)
			max = max(max, bs.dies[i]->size);
	return max;
}

/* ---- mmap: lazy, revocable ---- */
static vm_fault_t bs_fault_sim(struct vm_fault *vmf, struct bs_die *d)
{
	struct page *page = xa_load(&d->pages, vmf->pgoff), *old;

	if (!page) {
		page = alloc_page(GFP_HIGHUSER | __GFP_ZERO);
		if (!page)
			return VM_FAULT_OOM;
		old = xa_cmpxchg(&d->pages, vmf->pgoff, NULL, page, GFP_KERNEL);
		if (old) {	/* lost a race, or no memory for the entry */
			__free_page(page);
			if (xa_is_err(old))
				return VM_FAULT_OOM;
			page = old;
		}
	}
	return vmf_insert_pfn(vmf->vma, vmf->address, page_to_pfn(page));
}

static vm_fault_t bs_fault_pci(struct vm_fault *vmf, struct bs_die *d)
{
	struct vm_area_struct *vma = vmf->vma;
	pgprot_t prot = d->wc ? pgprot_writecombine(vma->vm_page_prot) :
				pgprot_noncached(vma->vm_page_prot);
	unsigned long pfn0 = PHYS_PFN(d->phys), npages = d->size >> PAGE_SHIFT;
	unsigned long start, end, addr, pgoff;
	vm_fault_t ret;

	ret = vmf_insert_pfn_prot(vma, vmf->address, pfn0 + vmf->pgoff, prot);
	if (ret & VM_FAULT_ERROR)
		return ret;
	/* 6.1 has no huge pfnmap faults: fill the surrounding 2 MiB as well. */
	start = max(vma->vm_start, ALIGN_DOWN(vmf->address, BS_PREFAULT));
	end = min(vma->vm_end, start + BS_PREFAULT);
	for (addr = start; addr < end; addr += PAGE_SIZE) {
		pgoff = vma->vm_pgoff + ((addr - vma->vm_start) >> PAGE_SHIFT);
		if (pgoff >= npages)
			break;
		if (addr != vmf->address &&
		    vmf_insert_pfn_prot(vma, addr, pfn0 + pgoff, prot) & VM_FAULT_ERROR)
			break;
	}
	return ret;
}

static vm_fault_t bs_fault(struct vm_fault *vmf)
{
	struct bs_die *d;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	down_read(&bs.map_lock);
	d = bs.active;
	/*
	 * Only the owning file's mappings, only inside the active die, and not
	 * while the die is lent: its memory belongs to the driver then.
	 */
	if (d && bs.owner == vmf->vma->vm_file->private_data &&
	    d->lend == BAR_SWAP_LEND_NONE && vmf->pgoff < d->size >> PAGE_SHIFT)
		ret = d->sim ? bs_fault_sim(vmf, d) : bs_fault_pci(vmf, d);
	up_read(&bs.map_lock);
	return ret;
}

static const struct vm_operations_struct bs_vm_ops = {
	.fault = bs_fault,
};

static int bs_mmap(struct file *f, struct vm_area_struct *vma)
{
	u64 slot;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;	/* a private COW copy of a die makes no sense */
	mutex_lock(&bs.lock);
	slot = bs_slot_size() >> PAGE_SHIFT;
	mutex_unlock(&bs.lock);
	if (!slot)
		return -ENODEV;
	if (vma->vm_pgoff >= slot || vma_pages(vma) > slot - vma->vm_pgoff)
		return -EINVAL;
	/* Nothing is mapped now: the fault handler decides, every time. */
	vm_flags_set(vma, VM_IO | VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &bs_vm_ops;
	return 0;
}

/* ---- lend: the die in the slot to a GPU driver, and back ---- */

static struct pci_driver bs_driver;

/* Is name in lend_drivers=?  Never called under bs.lock (kernel_param_lock nests outside it). */
static bool bs_lend_allowed(const char *name)
{
	bool ok;

	kernel_param_lock(THIS_MODULE);
	ok = in_list(lend_drivers, name);
	kernel_param_unlock(THIS_MODULE);
	return ok;
}

/*
 * Slot mode: a driver finds the die's VRAM through its BAR resource, which
 * still says where firmware put it.  While lent, the resource says where
 * the die decodes: the slot.  -EBUSY if the slot collides with another
 * resource (then nothing changed).
 */
static int die_move_resource(struct bs_die *d)
{
	struct resource *r = &d->pdev->resource[d->bar];
	int err;

	d->saved_res = *r;
	d->res_had_parent = r->parent;
	if (r->parent)
		release_resource(r);
	r->start = slot_addr;
	r->end = slot_addr + d->size - 1;
	r->flags &= ~IORESOURCE_UNSET;
	err = pci_claim_resource(d->pdev, d->bar);
	if (err) {
		r->start = d->saved_res.start;
		r->end = d->saved_res.end;
		r->flags = d->saved_res.flags;
		if (d->res_had_parent && pci_claim_resource(d->pdev, d->bar))
			pci_warn(d->pdev, "could not reclaim BAR%d after a failed lend\n", d->bar);
		return err;
	}
	d->res_moved = true;
	return 0;
}

static void die_restore_resource(struct bs_die *d)
{
	struct resource *r = &d->pdev->resource[d->bar];

	if (!d->res_moved)
		return;
	d->res_moved = false;
	if (r->parent)
		release_resource(r);
	r->start = d->saved_res.start;
	r->end = d->saved_res.end;
	r->flags = d->saved_res.flags;
	if (d->res_had_parent && pci_claim_resource(d->pdev, d->bar))
		pci_warn(d->pdev, "could not reclaim BAR%d at %pR after the lend\n", d->bar, r);
}

/*
 * Unbind the die from bar_swap and bind it to name.  bs_remove() sees the
 * die LENDING and only gives up the BAR region; the die keeps decoding in
 * the slot.  driver_override makes sure no other driver can take it.
 */
static int bs_bind_to(struct bs_die *d, const char *name)
{
	struct pci_dev *pdev = d->pdev;
	struct device_driver *drv;
	bool bound;
	int err;

	device_lock(&pdev->dev);
	d->saved_override = kstrdup(pdev->driver_override, GFP_KERNEL);
	device_unlock(&pdev->dev);
	err = driver_set_override(&pdev->dev, &pdev->driver_override, name, strlen(name));
	if (err)
		return err;
	device_release_driver(&pdev->dev);
	if (slot_addr) {
		err = die_move_resource(d);
		if (err) {
			pci_warn(pdev, "die %u: cannot lend in slot mode: the slot collides with another resource\n",
				 d->index);
			return err;
		}
	}
	err = device_attach(&pdev->dev);	/* synchronous: the driver's probe has run */
	if (err < 0)
		return err;
	device_lock(&pdev->dev);
	drv = pdev->dev.driver;
	bound = drv && !strcmp(drv->name, name);
	device_unlock(&pdev->dev);
	if (bound)
		return 0;
	/* Nothing took it: the driver is not loaded, or its probe refused the die. */
	if (!driver_find(name, &pci_bus_type)) {
		pci_info(pdev, "die %u: cannot lend to %s: no such PCI driver is loaded\n", d->index, name);
		return -ENOENT;
	}
	pci_info(pdev, "die %u: %s did not take it (its probe refused; see its log line)\n", d->index, name);
	return -ENXIO;
}

/*
 * Take the die back: the borrower unbinds (its remove() may wait for its
 * own users: nvidia's and vfio-pci's do), then bar_swap binds it again
 * (bs_probe() sees it RETURNING and parks it).  Runs without bs.lock, on
 * bs.wq or in the ioctl of a lend that failed.
 */
static int bs_unbind_from(struct bs_die *d)
{
	struct pci_dev *pdev = d->pdev;
	const char *old = d->saved_override;
	int err;

	device_release_driver(&pdev->dev);
	if (!device_is_registered(&pdev->dev))
		return -ENODEV;		/* hot-removed while lent */
	if (slot_addr)
		die_restore_resource(d);
	err = driver_set_override(&pdev->dev, &pdev->driver_override, KBUILD_MODNAME,
				  strlen(KBUILD_MODNAME));
	if (!err)
		err = device_driver_attach(&bs_driver.driver, &pdev->dev);
	/* As the operator left it (usually none), so rmmod leaves the die to whoever comes next. */
	driver_set_override(&pdev->dev, &pdev->driver_override, old ? old : "",
			    old ? strlen(old) : 0);
	kfree(old);
	d->saved_override = NULL;
	return err;
}

static void bs_return_done(struct bs_die *d, int err)
{
	s64 ms = ktime_ms_delta(ktime_get(), bs.return_start);

	lockdep_assert_held(&bs.lock);
	bs.returning = NULL;
	d->lend = BAR_SWAP_LEND_NONE;
	put_pid(d->lender);
	d->lender = NULL;
	if (err) {
		pr_err("die %u (%s): could not bind it back from %s (%d): removed\n", d->index,
		       d->bus_id, d->driver, err);
		d->present = false;
		d->driver[0] = '\0';
		pci_dev_put(d->pdev);
		d->pdev = NULL;
		if (bs.expired && bs.owner && bs.active == d)
			bs.owner->revoked = ETIME;
		bs_revoke_die(d);	/* its owner loses it, its waiters fail */
	} else {
		pr_info("die %u back from %s after %lld ms\n", d->index, d->driver, ms);
		d->driver[0] = '\0';
		/* The reference of the lend; the binding holds its own. */
		pci_dev_put(d->pdev);
		if (bs.active == d) {
			if (bs.expired && bs.owner) {
				pr_info("die %u: lease expired; revoked from pid %d, %u waiting\n",
					d->index, pid_nr(bs.owner_pid), bs.waiters);
				bs.owner->revoked = ETIME;
			}
			if (bs.expired || bs.leaving || !bs.owner) {
				bs_vacate();
			} else {
				/* The owner keeps the slot: its CPU window is open again. */
				down_write(&bs.map_lock);
				die_activate(d);
				up_write(&bs.map_lock);
			}
		}
	}
	wake_up_all(&bs.lend_wq);
	module_put(THIS_MODULE);	/* taken by the lend; bs_exit flushes bs.wq first */
}

static void bs_return_fn(struct work_struct *work)
{
	struct bs_die *d;
	int err;

	mutex_lock(&bs.lock);
	d = bs.returning;
	mutex_unlock(&bs.lock);
	if (!d)
		return;
	err = bs_unbind_from(d);
	mutex_lock(&bs.lock);
	bs_return_done(d, err);
	mutex_unlock(&bs.lock);
}

/* Under bs.lock: start taking a LENT die back; the slot waits until it is. */
static void bs_start_return(struct bs_die *d)
{
	lockdep_assert_held(&bs.lock);
	d->lend = BAR_SWAP_LEND_RETURNING;
	bs.returning = d;
	bs.return_start = ktime_get();
	bs.return_warned = false;
	pr_info("die %u: returning it from %s\n", d->index, d->driver);
	queue_work(bs.wq, &bs.return_work);
	bs_timer_arm();
}

/* ---- file ---- */
static int bs_open(struct inode *inode, struct file *f)
{
	struct bs_file *bf = kzalloc(sizeof(*bf), GFP_KERNEL);

	if (!bf)
		return -ENOMEM;
	f->private_data = bf;
	/* One address_space for every opener, whatever device node they used,
	 * so a single unmap_mapping_range() reaches every mapping. */
	f->f_mapping = bs.inode->i_mapping;
	mutex_lock(&bs.lock);
	bs.open_files++;
	mutex_unlock(&bs.lock);
	return 0;
}

static int bs_release(struct inode *inode, struct file *f)
{
	struct bs_file *bf = f->private_data;

	mutex_lock(&bs.lock);
	if (bs.owner == bf)
		bs_leave();	/* a pinned lent die comes back first */
	bs.open_files--;
	mutex_unlock(&bs.lock);
	kfree(bf);
	return 0;
}

/* Extensible structs: see "Extensible structs" in bar_swap_uapi.h. */
static int bs_copy_in(void *k, size_t ksize, size_t ver1, void __user *u, u32 *usize)
{
	if (get_user(*usize, (u32 __user *)u))
		return -EFAULT;
	if (*usize < ver1)
		return -EINVAL;
	if (*usize > BS_MAX_STRUCT)
		return -E2BIG;
	return copy_struct_from_user(k, ksize, u, *usize);
}

static int bs_copy_out(void __user *u, void *k, size_t ksize, u32 usize)
{
	u32 n = min_t(size_t, ksize, usize);

	*(u32 *)k = n;
	return copy_to_user(u, k, n) ? -EFAULT : 0;
}

static long bs_ioc_query(struct bs_file *bf, void __user *u)
{
	struct bar_swap_query q;
	u32 usize;
	int err = bs_copy_in(&q, sizeof(q), BAR_SWAP_QUERY_SIZE_VER1, u, &usize);

	if (err)
		return err;
	memset(&q, 0, sizeof(q));
	q.version = BAR_SWAP_UAPI_VERSION;
	q.num_slots = 1;
	mutex_lock(&bs.lock);
	q.num_dies = bs.num_dies;
	q.active_die = bs.active ? bs.active->index : -1;
	q.owner_pid = bs.owner_pid ? pid_vnr(bs.owner_pid) : 0;
	q.waiters = bs.waiters;
	q.open_files = bs.open_files;
	q.swaps = bs.swaps;
	q.slot_size = bs_slot_size();
	if (bs.owner == bf)
		q.flags |= BAR_SWAP_QUERY_OWNER;
	if (bf->revoked)
		q.flags |= BAR_SWAP_QUERY_REVOKED;
	if (bf->revoked == ETIME)
		q.flags |= BAR_SWAP_QUERY_LEASE;
	q.lease_ms = bs.lease_ms;
	q.lease_left_ms = bs_lease_left_ms();
	q.lent_die = -1;
	if (bs.active && bs.active->lend != BAR_SWAP_LEND_NONE) {
		struct bs_die *d = bs.active;

		q.lent_die = d->index;
		q.lend_state = d->lend;
		q.lender_pid = d->lender ? pid_vnr(d->lender) : 0;
		strscpy(q.lent_driver, d->driver, sizeof(q.lent_driver));
	}
	if (bs.returning)
		q.returning_ms = ktime_ms_delta(ktime_get(), bs.return_start);
	q.slot_flags = (bs.expired ? BAR_SWAP_SLOT_EXPIRED : 0) |
		       (bs.leaving ? BAR_SWAP_SLOT_LEAVING : 0);
	mutex_unlock(&bs.lock);
	return bs_copy_out(u, &q, sizeof(q), usize);
}

static long bs_ioc_die_info(void __user *u)
{
	struct bar_swap_die_info di;
	struct bs_die *d;
	u32 usize;
	int err = bs_copy_in(&di, sizeof(di), BAR_SWAP_DIE_INFO_SIZE_VER1, u, &usize);

	if (err)
		return err;
	mutex_lock(&bs.lock);
	if (di.die >= bs.num_dies) {
		mutex_unlock(&bs.lock);
		return -EINVAL;
	}
	d = bs.dies[di.die];
	memset(&di, 0, sizeof(di));
	di.die = d->index;
	di.flags = (d->present ? BAR_SWAP_DIE_PRESENT : 0) |
		   (d->enabled ? BAR_SWAP_DIE_ENABLED : 0) |
		   (bs.active == d ? BAR_SWAP_DIE_ACTIVE : 0) |
		   (d->sim ? BAR_SWAP_DIE_SIM : 0) |
		   (d->lend != BAR_SWAP_LEND_NONE ? BAR_SWAP_DIE_LENT : 0);
	di.policy = d->resident ? BAR_SWAP_POLICY_RESIDENT : BAR_SWAP_POLICY_PINNED;
	di.lend_state = d->lend;
	di.lender_pid = d->lender ? pid_vnr(d->lender) : 0;
	if (d->lend != BAR_SWAP_LEND_NONE)
		strscpy(di.driver, d->driver, sizeof(di.driver));
	else if (d->present)
		strscpy(di.driver, KBUILD_MODNAME, sizeof(di.driver));
	di.vendor = d->vendor;
	di.device = d->device;
	di.vram_size = d->mappable ? d->size : 0;
	di.acquires = d->acquires;
	di.bar_phys = d->sim ? 0 : d->phys;
	strscpy(di.bus_id, d->bus_id, sizeof(di.bus_id));
	mutex_unlock(&bs.lock);
	return bs_copy_out(u, &di, sizeof(di), usize);
}

static long bs_ioc_acquire(struct file *f, struct bs_file *bf, void __user *u)
{
	struct bar_swap_acquire a;
	struct bs_waiter w = { .bf = bf, .err = 0 };
	struct bs_die *d = NULL;
	ktime_t t0 = ktime_get();
	long ret;
	u32 usize;
	int err = bs_copy_in(&a, sizeof(a), BAR_SWAP_ACQUIRE_SIZE_VER1, u, &usize);

	if (err)
		return err;
	if (a.flags & ~BAR_SWAP_ACQUIRE_NONBLOCK)
		return -EINVAL;
	w.pid = get_task_pid(current, PIDTYPE_TGID);

	mutex_lock(&bs.lock);
	if (a.die >= bs.num_dies) {
		err = -EINVAL;
		goto unlock;
	}
	d = bs.dies[a.die];
	if (!die_usable(d)) {
		err = -ENODEV;
		goto unlock;
	}
	if (bf->queued) {
		err = -EBUSY;
		goto unlock;
	}
	if (bs.owner == bf) {		/* the owner may move the slot at will ... */
		if (bs.active != d && die_pins_slot(bs.active)) {
			err = -EBUSY;	/* ... unless its die is lent: return it first */
			goto unlock;
		}
		bf->revoked = 0;
		if (bs.active != d)
			bs_switch(bf, d, w.pid);
		goto unlock;
	}
	bf->revoked = 0;
	if (bs_slot_free() && list_empty(&bs.queue)) {
		bs_switch(bf, d, w.pid);
		goto unlock;
	}
	if ((f->f_flags & O_NONBLOCK) || (a.flags & BAR_SWAP_ACQUIRE_NONBLOCK)) {
		err = -EAGAIN;
		goto unlock;
	}

	/* Queue at the tail; bs_vacate() serves the head, one at a time. */
	w.die = d;
	w.since = ktime_get();
	init_completion(&w.done);
	list_add_tail(&w.node, &bs.queue);
	bs.waiters++;
	bf->queued = true;
	bs_lease_update();	/* someone waits: the owner's lease runs */
	mutex_unlock(&bs.lock);

	if (a.timeout_ms)
		ret = wait_for_completion_interruptible_timeout(&w.done,
				msecs_to_jiffies(a.timeout_ms));
	else
		ret = wait_for_completion_interruptible(&w.done) ?: 1;

	mutex_lock(&bs.lock);
	bf->queued = false;
	if (!w.granted && !w.err) {	/* still queued: signal or timeout */
		list_del(&w.node);
		bs.waiters--;
		bs_lease_update();
		/* -EINTR, not -ERESTARTSYS: a restart would lose our place. */
		err = ret < 0 ? -EINTR : -ETIMEDOUT;
	} else {
		err = w.err;
	}
unlock:
	mutex_unlock(&bs.lock);
	put_pid(w.pid);
	if (err)
		return err;
	a.vram_size = d->size;
	a.wait_ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	return bs_copy_out(u, &a, sizeof(a), usize);
}

static long bs_ioc_release(struct bs_file *bf)
{
	int err = 0;

	mutex_lock(&bs.lock);
	if (bs.owner == bf)
		bs_leave();
	else if (bf->revoked)
		err = -bf->revoked;	/* ENODEV or ETIME, reported once */
	else
		err = -EPERM;
	bf->revoked = 0;
	mutex_unlock(&bs.lock);
	return err;
}

static long bs_ioc_set_enabled(void __user *u)
{
	struct bar_swap_set_enabled s;
	struct bs_die *d;
	u32 usize;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = bs_copy_in(&s, sizeof(s), BAR_SWAP_SET_ENABLED_SIZE_VER1, u, &usize);
	if (err)
		return err;
	if (s.enabled > 1 || s.__reserved)
		return -EINVAL;
	mutex_lock(&bs.lock);
	if (s.die >= bs.num_dies) {
		err = -EINVAL;
	} else {
		d = bs.dies[s.die];
		if (!d->present || !d->mappable) {
			err = -ENODEV;
		} else if (d->lend != BAR_SWAP_LEND_NONE && !s.enabled) {
			err = -EBUSY;	/* bound to its driver: return it first */
		} else if (d->enabled != s.enabled) {
			d->enabled = s.enabled;
			pr_info("die %u (%s) %s\n", d->index, d->bus_id,
				s.enabled ? "enabled" : "quarantined");
			if (!s.enabled)
				bs_revoke_die(d);
		}
	}
	mutex_unlock(&bs.lock);
	return err;
}

static long bs_ioc_lend(struct bs_file *bf, void __user *u)
{
	struct bar_swap_lend l;
	struct bs_die *d;
	u32 usize;
	int back, err = bs_copy_in(&l, sizeof(l), BAR_SWAP_LEND_SIZE_VER1, u, &usize);

	if (err)
		return err;
	if (l.flags || l.__reserved || !memchr(l.driver, '\0', sizeof(l.driver)) || !l.driver[0] ||
	    !strcmp(l.driver, KBUILD_MODNAME))
		return -EINVAL;
	if (!bs_lend_allowed(l.driver)) {
		pr_info("die %u: lend to %s refused: not in lend_drivers\n", l.die, l.driver);
		return -EPERM;
	}
	mutex_lock(&bs.lock);
	if (l.die >= bs.num_dies) {
		err = -EINVAL;
		goto unlock;
	}
	d = bs.dies[l.die];
	if (bs.owner != bf || bs.active != d) {
		/* Only the owner lends, and only the die in the slot. */
		err = -EPERM;
	} else if (!die_usable(d)) {
		err = -ENODEV;
	} else if (d->sim) {
		err = -EOPNOTSUPP;	/* RAM, not a device: there is nothing to bind */
	} else if (d->lend == BAR_SWAP_LEND_LENT && !strcmp(d->driver, l.driver)) {
		/* A resident die, acquired again: the caller lends it now. */
		put_pid(d->lender);
		d->lender = get_task_pid(current, PIDTYPE_TGID);
	} else if (d->lend != BAR_SWAP_LEND_NONE) {
		err = -EBUSY;
	} else {
		err = 1;		/* go on below, without bs.lock */
	}
	if (err <= 0)
		goto unlock;
	d->lend = BAR_SWAP_LEND_LENDING;
	strscpy(d->driver, l.driver, sizeof(d->driver));
	d->lender = get_task_pid(current, PIDTYPE_TGID);
	pci_dev_get(d->pdev);
	__module_get(THIS_MODULE);	/* no rmmod while a die is with another driver */
	/* Our own window closes: the die's memory is the driver's from now on. */
	down_write(&bs.map_lock);
	unmap_mapping_range(bs.inode->i_mapping, 0, 0, 1);
	up_write(&bs.map_lock);
	mutex_unlock(&bs.lock);

	err = bs_bind_to(d, l.driver);

	mutex_lock(&bs.lock);
	if (err) {
		/* Straight back to bar_swap (no driver holds it); the slot stays pinned. */
		d->lend = BAR_SWAP_LEND_RETURNING;
		bs.returning = d;
		bs.return_start = ktime_get();
		mutex_unlock(&bs.lock);
		back = bs_unbind_from(d);
		mutex_lock(&bs.lock);
		bs_return_done(d, back);
		goto unlock;
	}
	d->lend = BAR_SWAP_LEND_LENT;
	pr_info("die %u (%s) lent to %s by pid %d (%s)\n", d->index, d->bus_id, d->driver,
		pid_nr(d->lender), d->resident ? "resident" : "pinned");
	/* The owner let go or ran out of lease while the driver probed. */
	if (bs.active == d && (bs.leaving || bs.expired)) {
		if (!d->resident) {
			bs_start_return(d);
		} else {
			if (bs.expired && bs.owner)
				bs.owner->revoked = ETIME;
			bs_vacate();
		}
	}
unlock:
	mutex_unlock(&bs.lock);
	return err;
}

static long bs_ioc_return(struct bs_file *bf, void __user *u)
{
	struct bar_swap_return r;
	struct bs_die *d;
	u32 usize;
	int err = bs_copy_in(&r, sizeof(r), BAR_SWAP_RETURN_SIZE_VER1, u, &usize);

	if (err)
		return err;
	if ((r.flags & ~BAR_SWAP_RETURN_NONBLOCK) || r.__reserved)
		return -EINVAL;
	mutex_lock(&bs.lock);
	if (r.die >= bs.num_dies) {
		mutex_unlock(&bs.lock);
		return -EINVAL;
	}
	d = bs.dies[r.die];
	if (bs.owner != bf || bs.active != d)
		err = -EPERM;
	else if (d->lend == BAR_SWAP_LEND_LENDING)
		err = -EBUSY;
	else if (d->lend == BAR_SWAP_LEND_LENT)
		bs_start_return(d);
	mutex_unlock(&bs.lock);
	if (err)
		return err;
	if (r.flags & BAR_SWAP_RETURN_NONBLOCK)
		return READ_ONCE(d->lend) == BAR_SWAP_LEND_NONE ? 0 : -EINPROGRESS;
	if (wait_event_interruptible(bs.lend_wq, READ_ONCE(d->lend) != BAR_SWAP_LEND_RETURNING))
		return -EINTR;	/* not restarted: the return goes on either way */
	mutex_lock(&bs.lock);
	err = d->present ? 0 : -ENODEV;
	mutex_unlock(&bs.lock);
	return err;
}

static long bs_ioc_set_policy(void __user *u)
{
	struct bar_swap_set_policy p;
	struct bs_die *d;
	u32 usize;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = bs_copy_in(&p, sizeof(p), BAR_SWAP_SET_POLICY_SIZE_VER1, u, &usize);
	if (err)
		return err;
	if (p.policy > BAR_SWAP_POLICY_RESIDENT || p.__reserved)
		return -EINVAL;
	mutex_lock(&bs.lock);
	if (p.die >= bs.num_dies) {
		err = -EINVAL;
	} else {
		d = bs.dies[p.die];
		if (d->lend != BAR_SWAP_LEND_NONE) {
			err = -EBUSY;
		} else if (d->resident != (p.policy == BAR_SWAP_POLICY_RESIDENT)) {
			d->resident = p.policy == BAR_SWAP_POLICY_RESIDENT;
			pr_info("die %u (%s): policy %s\n", d->index, d->bus_id,
				d->resident ? "resident" : "pinned");
		}
	}
	mutex_unlock(&bs.lock);
	return err;
}

static long bs_ioc_set_lease(void __user *u)
{
	struct bar_swap_set_lease l;
	u32 usize;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = bs_copy_in(&l, sizeof(l), BAR_SWAP_SET_LEASE_SIZE_VER1, u, &usize);
	if (err)
		return err;
	mutex_lock(&bs.lock);
	if (bs.lease_ms != l.lease_ms)
		pr_info("lease %u ms (was %u)\n", l.lease_ms, bs.lease_ms);
	bs.lease_ms = l.lease_ms;
	bs.contended_since = 0;	/* a new lease counts from now */
	bs_lease_update();
	mutex_unlock(&bs.lock);
	return 0;
}

static long bs_ioc_queue(void __user *u)
{
	struct bar_swap_queue q;
	struct bar_swap_queue_entry *e;
	struct bs_waiter *w;
	ktime_t now = ktime_get();
	u32 usize, n = 0;
	int err = bs_copy_in(&q, sizeof(q), BAR_SWAP_QUEUE_SIZE_VER1, u, &usize);

	if (err)
		return err;
	q.capacity = min_t(u32, q.capacity, BS_MAX_QUEUE);
	e = kcalloc(max_t(u32, q.capacity, 1), sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	mutex_lock(&bs.lock);
	list_for_each_entry(w, &bs.queue, node) {
		if (n == q.capacity)
			break;
		e[n].pid = pid_vnr(w->pid);
		e[n].die = w->die->index;
		e[n].waited_ns = ktime_to_ns(ktime_sub(now, w->since));
		n++;
	}
	q.total = bs.waiters;
	mutex_unlock(&bs.lock);
	/* User memory only with bs.lock dropped (see Locking). */
	if (n && copy_to_user(u64_to_user_ptr(q.entries), e, n * sizeof(*e)))
		err = -EFAULT;
	kfree(e);
	if (err)
		return err;
	q.count = n;
	return bs_copy_out(u, &q, sizeof(q), usize);
}

static long bs_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct bs_file *bf = f->private_data;
	void __user *u = (void __user *)arg;

	/* Dispatch on the number only: the struct size lives in the struct. */
	if (_IOC_TYPE(cmd) != BAR_SWAP_IOC_MAGIC)
		return -ENOTTY;
	switch (_IOC_NR(cmd)) {
	case _IOC_NR(BAR_SWAP_IOC_QUERY):
		return bs_ioc_query(bf, u);
	case _IOC_NR(BAR_SWAP_IOC_DIE_INFO):
		return bs_ioc_die_info(u);
	case _IOC_NR(BAR_SWAP_IOC_ACQUIRE):
		return bs_ioc_acquire(f, bf, u);
	case _IOC_NR(BAR_SWAP_IOC_RELEASE):
		return bs_ioc_release(bf);
	case _IOC_NR(BAR_SWAP_IOC_SET_ENABLED):
		return bs_ioc_set_enabled(u);
	case _IOC_NR(BAR_SWAP_IOC_LEND):
		return bs_ioc_lend(bf, u);
	case _IOC_NR(BAR_SWAP_IOC_RETURN):
		return bs_ioc_return(bf, u);
	case _IOC_NR(BAR_SWAP_IOC_SET_POLICY):
		return bs_ioc_set_policy(u);
	case _IOC_NR(BAR_SWAP_IOC_SET_LEASE):
		return bs_ioc_set_lease(u);
	case _IOC_NR(BAR_SWAP_IOC_QUEUE):
		return bs_ioc_queue(u);
	}
	return -ENOTTY;
}

static const struct file_operations bs_fops = {
	.owner		= THIS_MODULE,
	.open		= bs_open,
	.release	= bs_release,
	.unlocked_ioctl	= bs_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,	/* same layout on 32-bit */
	.mmap		= bs_mmap,
};

static struct miscdevice bs_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "bar_swap",
	.fops	= &bs_fops,
	.mode	= 0600,
};

/*
 * The pseudo filesystem that owns the shared inode.  No .owner: the module
 * mounts it itself, and a self-reference would make rmmod fail forever.
 */
static int bs_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, BS_FS_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type bs_fs_type = {
	.name		 = "bar_swap",
	.init_fs_context = bs_fs_init_fs_context,
	.kill_sb	 = kill_anon_super,
};

/* ---- dies: registry ---- */

/* A new index, or the one this bus id had before it was unbound. */
static struct bs_die *bs_die_slot(const char *bus_id)
{
	struct bs_die *d;
	unsigned int i;

	for (i = 0; i < bs.num_dies; i++) {
		d = bs.dies[i];
		if (!d->present && !d->sim && !strcmp(d->bus_id, bus_id))
			return d;
	}
	if (bs.num_dies == BAR_SWAP_MAX_DIES)
		return NULL;
	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return NULL;
	d->index = bs.num_dies;
	xa_init(&d->pages);
	bs.dies[bs.num_dies++] = d;
	return d;
}

static int __init bs_add_sim_dies(void)
{
	u64 size = memparse(sim_size, NULL);
	struct bs_die *d;
	unsigned int i;
	char id[BAR_SWAP_BUS_ID_LEN];

	if (!sim_dies)
		return 0;
	if (sim_dies > BAR_SWAP_MAX_DIES || size < PAGE_SIZE || !PAGE_ALIGNED(size)) {
		pr_err("sim_dies=%u sim_size=%s: need 1..%d dies of whole pages\n",
		       sim_dies, sim_size, BAR_SWAP_MAX_DIES);
		return -EINVAL;
	}
	for (i = 0; i < sim_dies; i++) {
		snprintf(id, sizeof(id), "sim:%u", i);
		mutex_lock(&bs.lock);
		d = bs_die_slot(id);
		if (d) {
			strscpy(d->bus_id, id, sizeof(d->bus_id));
			d->sim = d->present = d->mappable = true;
			d->enabled = !in_list(disable, id);
			d->size = size;
		}
		mutex_unlock(&bs.lock);
		if (!d)
			return -ENOMEM;
	}
	pr_info("%u simulated dies of %llu MiB\n", sim_dies, size >> 20);
	return 0;
}

static void bs_free_dies(void)
{
	struct page *page;
	unsigned long idx;
	unsigned int i;

	for (i = 0; i < bs.num_dies; i++) {
		xa_for_each(&bs.dies[i]->pages, idx, page)
			__free_page(page);
		xa_destroy(&bs.dies[i]->pages);
		kfree(bs.dies[i]);
		bs.dies[i] = NULL;
	}
	bs.num_dies = 0;
}

/* ---- dies: PCI binding ---- */
static int bs_pick_bar(struct pci_dev *pdev)
{
	int i, best = -1;

	if (vram_bar >= 0)
		return vram_bar < PCI_STD_NUM_BARS &&
		       pci_resource_flags(pdev, vram_bar) & IORESOURCE_MEM ? vram_bar : -1;
	for (i = 0; i < PCI_STD_NUM_BARS; i++)
		if (pci_resource_flags(pdev, i) & IORESOURCE_MEM &&
		    (best < 0 || pci_resource_len(pdev, i) > pci_resource_len(pdev, best)))
			best = i;
	return best;
}

/* Where the die's VRAM will decode, or why it cannot be mapped. */
static const char *bs_window(struct bs_die *d)
{
	struct resource *r = &d->pdev->resource[d->bar];

	if (d->size < PAGE_SIZE)
		return "VRAM BAR smaller than a page";
	if (slot_addr) {
		if (slot_addr & (d->size - 1))
			return "slot_addr not aligned to the BAR size";
		if (!d->bar64 && upper_32_bits(slot_addr))
			return "32-bit BAR cannot reach slot_addr";
		d->phys = slot_addr;
		return NULL;
	}
	if (!r->parent || (r->flags & IORESOURCE_UNSET))
		return "VRAM BAR not assigned (load with slot_addr=)";
	d->phys = r->start;
	return NULL;
}

/* Under bs.lock: the die of pdev if it is in the hands of another driver, or on its way. */
static struct bs_die *bs_lent_die(struct pci_dev *pdev)
{
	unsigned int i;

	for (i = 0; i < bs.num_dies; i++)
		if (bs.dies[i]->pdev == pdev && bs.dies[i]->lend != BAR_SWAP_LEND_NONE)
			return bs.dies[i];
	return NULL;
}

/* Claim the BAR so nothing else maps it behind our back (per-die mode), and its memtype. */
static void bs_claim_window(struct bs_die *d)
{
	if (slot_addr)
		return;
	d->region = !pci_request_region(d->pdev, d->bar, KBUILD_MODNAME);
	/*
	 * VRAM wants write-combining, and without a WC memtype PAT forces every
	 * insert to UC-.  Only a window that is the die's own BAR resource can
	 * be reserved cleanly; a slot may straddle other resources (the PAT
	 * sanity check WARNs), so slot mode maps uncached.
	 */
	d->wc = !arch_io_reserve_memtype_wc(d->phys, d->size);
}

static void bs_unclaim_window(struct bs_die *d)
{
	if (d->region)
		pci_release_region(d->pdev, d->bar);
	if (d->wc)
		arch_io_free_memtype_wc(d->phys, d->size);
	d->region = d->wc = false;
}

/*
 * A lent die binding back (bs_unbind_from): the same die, index, BAR and
 * quarantine state as before the lend.  Any other bind of a lent die (a
 * hand-written driver_override) is refused: it is in the lend's hands.
 */
static int bs_probe_returning(struct bs_die *d)
{
	mutex_lock(&bs.lock);
	if (d->lend != BAR_SWAP_LEND_RETURNING) {
		mutex_unlock(&bs.lock);
		pci_warn(d->pdev, "die %u is lent to %s: it comes back through bar_swap's RETURN\n",
			 d->index, d->driver);
		return -EBUSY;
	}
	die_park(d);	/* the driver may have left decode on; bs_return_done() decides */
	mutex_unlock(&bs.lock);
	pci_set_drvdata(d->pdev, d);
	bs_claim_window(d);
	return 0;
}

static int bs_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	int bar = bs_pick_bar(pdev);
	const char *why;
	struct bs_die *d;

	if (bar < 0)
		return -ENODEV;

	mutex_lock(&bs.lock);
	d = bs_lent_die(pdev);
	if (d) {
		mutex_unlock(&bs.lock);
		return bs_probe_returning(d);
	}
	d = bs_die_slot(pci_name(pdev));
	if (!d) {
		mutex_unlock(&bs.lock);
		return -ENOSPC;
	}
	strscpy(d->bus_id, pci_name(pdev), sizeof(d->bus_id));
	d->pdev = pdev;
	d->bar = bar;
	d->bar64 = pci_resource_flags(pdev, bar) & IORESOURCE_MEM_64;
	d->size = pci_resource_len(pdev, bar);
	d->vendor = pdev->vendor;
	d->device = pdev->device;
	/* Park first: whatever state firmware left, decode is off from now on. */
	die_park(d);
	pci_read_config_dword(pdev, PCI_BASE_ADDRESS_0 + 4 * bar, &d->bar_orig[0]);
	if (d->bar64)
		pci_read_config_dword(pdev, PCI_BASE_ADDRESS_0 + 4 * bar + 4, &d->bar_orig[1]);
	why = bs_window(d);
	d->mappable = !why;
	d->enabled = d->mappable && !in_list(disable, d->bus_id);
	d->present = true;
	mutex_unlock(&bs.lock);

	pci_set_drvdata(pdev, d);
	if (why) {
		pci_warn(pdev, "die %u bound but unusable: %s\n", d->index, why);
		return 0;
	}
	bs_claim_window(d);
	pci_info(pdev, "die %u: BAR%d %llu MiB at %pa%s, %s, parked%s\n", d->index, bar,
		 d->size >> 20, &d->phys, slot_addr ? " (slot)" : "",
		 d->wc ? "write-combining" : "uncached", d->enabled ? "" : ", quarantined");
	return 0;
}

static void bs_remove(struct pci_dev *pdev)
{
	struct bs_die *d = pci_get_drvdata(pdev);

	mutex_lock(&bs.lock);
	if (d->lend != BAR_SWAP_LEND_NONE) {
		/*
		 * Unbound by a lend (or by the return of a lend that failed):
		 * the die stays ours, decoding in the slot; only the BAR region
		 * goes, so the driver can request it.
		 */
		bs_unclaim_window(d);
		mutex_unlock(&bs.lock);
		return;
	}
	d->present = false;
	bs_revoke_die(d);	/* zaps and parks if it was in the slot */
	die_park(d);
	if (slot_addr)
		die_write_bar(d, d->bar_orig[0], d->bar_orig[1]);
	bs_unclaim_window(d);
	d->pdev = NULL;
	mutex_unlock(&bs.lock);
	pci_info(pdev, "die %u unbound (parked)\n", d->index);
}

/* Tesla K80: two GK210 dies per card. */
static const struct pci_device_id bs_pci_ids[] = {
	{ PCI_DEVICE(PCI_VENDOR_ID_NVIDIA, 0x102d) },
	{ }
};
/*
 * Deliberately no MODULE_DEVICE_TABLE: udev must not autoload this at boot
 * (see docs/kmod.md, "no boot-time automation").
 */

static struct pci_driver bs_driver = {
	.name		= KBUILD_MODNAME,
	.id_table	= bs_pci_ids,
	.probe		= bs_probe,
	.remove		= bs_remove,
};

#define BS_MAX_DYNIDS 16
static struct pci_device_id bs_dyn_ids[BS_MAX_DYNIDS + 1];

static void __init bs_add_ids(void)
{
	char *buf, *p, *id;
	unsigned int n = 0;

	if (!ids)
		return;
	buf = p = kstrdup(ids, GFP_KERNEL);
	while (buf && (id = strsep(&p, ","))) {
		unsigned int vendor, device, subvendor = PCI_ANY_ID,
			subdevice = PCI_ANY_ID, class = 0, class_mask = 0;
		int fields;

		if (!*id)
			continue;
		fields = sscanf(id, "%x:%x:%x:%x:%x:%x", &vendor, &device,
				&subvendor, &subdevice, &class, &class_mask);
		if (fields < 2 || n == BS_MAX_DYNIDS) {
			pr_warn("ignoring id \"%s\"\n", id);
			continue;
		}
		bs_dyn_ids[n++] = (struct pci_device_id) {
			vendor, device, subvendor, subdevice, class, class_mask };
		if (pci_add_dynid(&bs_driver, vendor, device, subvendor, subdevice,
				  class, class_mask, 0))
			pr_warn("cannot add id %s\n", id);
	}
	kfree(buf);
}

/* Dies someone parked on pci-stub at boot (pci-stub.ids=) come to us now. */
static void __init bs_takeover(void)
{
	struct pci_dev *pdev = NULL;

	for_each_pci_dev(pdev) {
		if (!pdev->dev.driver || strcmp(pdev->dev.driver->name, "pci-stub"))
			continue;
		if (!pci_match_id(bs_pci_ids, pdev) && !pci_match_id(bs_dyn_ids, pdev))
			continue;
		device_release_driver(&pdev->dev);
		if (device_driver_attach(&bs_driver.driver, &pdev->dev))
			pci_warn(pdev, "could not take over from pci-stub\n");
	}
}

/* ---- module ---- */
static int __init bs_init(void)
{
	int err;

	BUILD_BUG_ON(sizeof(struct bar_swap_query) != BAR_SWAP_QUERY_SIZE_VER2);
	BUILD_BUG_ON(sizeof(struct bar_swap_die_info) != BAR_SWAP_DIE_INFO_SIZE_VER2);
	BUILD_BUG_ON(sizeof(struct bar_swap_acquire) != BAR_SWAP_ACQUIRE_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct bar_swap_set_enabled) != BAR_SWAP_SET_ENABLED_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct bar_swap_lend) != BAR_SWAP_LEND_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct bar_swap_return) != BAR_SWAP_RETURN_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct bar_swap_set_policy) != BAR_SWAP_SET_POLICY_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct bar_swap_set_lease) != BAR_SWAP_SET_LEASE_SIZE_VER1);
	BUILD_BUG_ON(sizeof(struct bar_swap_queue) != BAR_SWAP_QUEUE_SIZE_VER1);

	if (slot_addr && !PAGE_ALIGNED(slot_addr))
		return -EINVAL;
	bs.lease_ms = lease_ms;
	INIT_DELAYED_WORK(&bs.lease_work, bs_lease_fn);
	INIT_WORK(&bs.return_work, bs_return_fn);
	bs.wq = alloc_ordered_workqueue(KBUILD_MODNAME, 0);
	if (!bs.wq)
		return -ENOMEM;
	err = bs_add_sim_dies();
	if (err)
		goto free_dies;
	bs.mnt = kern_mount(&bs_fs_type);
	if (IS_ERR(bs.mnt)) {
		err = PTR_ERR(bs.mnt);
		goto free_dies;
	}
	bs.inode = alloc_anon_inode(bs.mnt->mnt_sb);
	if (IS_ERR(bs.inode)) {
		err = PTR_ERR(bs.inode);
		goto unmount;
	}
	err = misc_register(&bs_misc);
	if (err)
		goto iput;
	err = pci_register_driver(&bs_driver);
	if (err)
		goto deregister;
	bs_add_ids();
	if (takeover)
		bs_takeover();
	pr_info("ready: %u dies, one slot%s\n", bs.num_dies, slot_addr ? " (slot mode)" : "");
	return 0;

deregister:
	misc_deregister(&bs_misc);
iput:
	iput(bs.inode);
unmount:
	kern_unmount(bs.mnt);
free_dies:
	bs_free_dies();
	destroy_workqueue(bs.wq);
	return err;
}

static void __exit bs_exit(void)
{
	/*
	 * No file is open (each holds a module reference), so no owner either;
	 * no die is lent (a lend holds one too), but its return's last lines
	 * may still be running on bs.wq: destroy_workqueue() waits for them.
	 */
	pci_unregister_driver(&bs_driver);
	destroy_workqueue(bs.wq);
	cancel_delayed_work_sync(&bs.lease_work);
	misc_deregister(&bs_misc);
	iput(bs.inode);
	kern_unmount(bs.mnt);
	bs_free_dies();
	put_pid(bs.owner_pid);
}

module_init(bs_init);
module_exit(bs_exit);
MODULE_DESCRIPTION("bar_swap: time-multiplex GPU dies through one BAR slot");
MODULE_LICENSE("GPL");
