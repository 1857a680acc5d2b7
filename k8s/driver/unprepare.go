package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	resourceapi "k8s.io/api/resource/v1"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/publish"
)

// UnprepareResourceClaims gives back every job of each claim
// (NodeUnprepareResources). A job already gone is success; a job something
// still holds (EBUSY: a container, a process on it) is the claim's error, so
// the kubelet tries again.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	defer d.poke()
	errs := make([]error, len(claims))
	var wg sync.WaitGroup
	for i, c := range claims {
		wg.Go(func() {
			defer d.parts.lock(claimPart(c.UID))()
			start := time.Now()
			defer func() { d.metrics.observe(&d.metrics.unprepare, &d.metrics.unprepareErrors, start, errs[i]) }()
			// Read under the claim's lock: its jobs are made only by its
			// own prepare, which the lock keeps out until this is done.
			node, err := d.fs.ReadNode()
			if err != nil {
				errs[i] = fmt.Errorf("accelfs: %w", err)
				return
			}
			errs[i] = d.unprepareClaim(ctx, node, c)
		})
	}
	wg.Wait()
	out := make(map[types.UID]error, len(claims))
	for i, c := range claims {
		out[c.UID] = errs[i]
	}
	return out, nil
}

func (d *Driver) unprepareClaim(ctx context.Context, node *accelfs.Node, c kubeletplugin.NamespacedObject) error {
	part := claimPart(c.UID)
	var errs []error
	var removed []string
	for _, card := range node.Devices {
		for _, j := range card.Jobs {
			if p, _, ok := ParseJobName(j.Name); !ok || p != part {
				continue
			}
			if err := d.fs.Remove(card.Name, j.Profile, j.Name); err != nil && !accelfs.IsGone(err) {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, j.Name)
		}
	}
	// No longer the scheduler's to account for: a job left behind (busy) is
	// taken away from the counters until it is gone.
	d.setLive(part, false)
	klog.FromContext(ctx).V(2).Info("Unprepared", "claim", c, "removed", removed, "failed", len(errs))
	return errors.Join(errs...)
}

func (d *Driver) poke() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// reconcile looks at accelfs's jobs of this plugin against the API server's
// claims. It fails closed: a job is given back only when it is proven stale
// (its claim is gone, or the claim is allocated a device of this node that
// is not the job's card, profile and placement); a job it cannot judge
// stays, and so does every job when the claims cannot be listed. A job
// whose claim is not known to be prepared here is taken away from the
// counters until a prepare or a later look accounts for it, so that a
// failed list never shows a stale job's slices as free. A job something
// holds answers EBUSY to the rmdir and stays until the next look.
//
// No lock is held across the list: the jobs are read first, then the
// claims (a claim made after the read has no job in it, so nothing carved
// meanwhile is taken for stale), and each job given back is given back
// under its own claim's lock.
func (d *Driver) reconcile(ctx context.Context) error {
	defer d.poke()
	logger := klog.FromContext(ctx)
	node, err := d.fs.ReadNode()
	if err != nil {
		return fmt.Errorf("accelfs: %w", err)
	}
	type ours struct {
		card *accelfs.Device
		job  accelfs.Job
		part string
		idx  int
	}
	var jobs []ours
	for i := range node.Devices {
		for _, j := range node.Devices[i].Jobs {
			if part, idx, ok := ParseJobName(j.Name); ok {
				jobs = append(jobs, ours{&node.Devices[i], j, part, idx})
			}
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	ctxList, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	list, err := d.claims.ResourceClaims("").List(ctxList, metav1.ListOptions{})
	if err != nil {
		// Unknown: every job stays, and stays taken in the scheduler's view
		// unless a prepare on this node accounts for it.
		return fmt.Errorf("list ResourceClaims (%d jobs kept, as taken unless prepared here): %w", len(jobs), err)
	}
	byPart := map[string]*resourceapi.ResourceClaim{}
	for i := range list.Items {
		byPart[claimPart(list.Items[i].UID)] = &list.Items[i]
	}
	for _, j := range jobs {
		claim := byPart[j.part]
		verdict := stale
		if claim != nil {
			verdict = d.stillAllocated(node, claim, j.idx, j.job)
		}
		switch verdict {
		case current:
			d.setLive(j.part, true)
			d.setDevice(j.job.Name, ourResults(claim)[j.idx].Device)
			continue
		case unknown:
			logger.Info("Kept a job the reconcile cannot judge (its card's devices are not in node.json now)", "job", j.job.Name, "card", j.card.Name)
			continue
		}
		why := "its claim is gone"
		if claim != nil {
			why = fmt.Sprintf("claim %s is no longer allocated that device", klog.KObj(claim))
		}
		d.giveBack(ctx, j.card.Name, j.job, why)
	}
	return nil
}

// giveBack removes a stale job under its claim's lock, unless a prepare of
// that claim got there first (the claim is live again: the job is its).
func (d *Driver) giveBack(ctx context.Context, card string, job accelfs.Job, why string) {
	logger := klog.FromContext(ctx)
	part, _, _ := ParseJobName(job.Name)
	defer d.parts.lock(part)()
	if d.accounted(job.Name) {
		return
	}
	if err := d.fs.Remove(card, job.Profile, job.Name); err != nil && !accelfs.IsGone(err) {
		logger.Error(err, "Kept a stale job: rmdir refused; tried again later", "job", job.Name, "why", why)
		return
	}
	logger.Info("Gave back a job", "job", job.Name, "card", card, "profile", job.Profile, "why", why)
}

type verdict int

const (
	current verdict = iota // the claim is allocated the job's placement
	stale                  // provably not: give it back
	unknown                // cannot say: keep it
)

// stillAllocated says whether the claim's idx-th result of this driver is a
// device of this node at the job's card, profile and placement.
func (d *Driver) stillAllocated(node *accelfs.Node, claim *resourceapi.ResourceClaim, idx int, job accelfs.Job) verdict {
	results := ourResults(claim)
	if idx >= len(results) || results[idx].Pool != d.cfg.NodeName {
		return stale
	}
	p, ok := publish.Lookup(node, results[idx].Device)
	if !ok {
		return unknown // its card is away or changed mode: not a proof
	}
	if p.Card.Name != job.Device || p.Profile.Name != job.Profile {
		return stale
	}
	// A lost job holds no placement; its claim's next prepare carves it again.
	if job.Placement == nil || *job.Placement == p.Span {
		return current
	}
	return stale
}

// reconcileRetry is the first wait before a failed reconcile is tried again.
var reconcileRetry = 10 * time.Second

func (d *Driver) reconcileLoop(ctx context.Context) {
	if d.cfg.ReconcileEvery < 0 {
		return
	}
	// A failed look is tried again soon (doubling up to the period): until
	// it succeeds, jobs not prepared here are kept as taken.
	next := d.cfg.ReconcileEvery
	if d.reconcileFailed {
		next = min(reconcileRetry, d.cfg.ReconcileEvery)
	}
	retry := reconcileRetry
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
			if err := d.reconcile(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Reconcile failed; tried again", "in", retry)
				next, retry = min(retry, d.cfg.ReconcileEvery), min(2*retry, d.cfg.ReconcileEvery)
				continue
			}
			next, retry = d.cfg.ReconcileEvery, reconcileRetry
		}
	}
}
