package driver

import (
	"context"
	"errors"
	"fmt"
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
	d.opMu.Lock()
	defer d.opMu.Unlock()
	defer d.poke()
	node, err := d.fs.ReadNode()
	if err != nil {
		return nil, fmt.Errorf("accelfs: %w", err)
	}
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = d.unprepareClaim(ctx, node, c)
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
// claims. A job stays when its claim exists and is still allocated that
// device at that placement; otherwise it is given back (a claim deleted while
// the plugin or the kubelet was down). A job something holds answers EBUSY to
// the rmdir and stays until the next look.
func (d *Driver) reconcile(ctx context.Context) error {
	d.opMu.Lock()
	defer d.opMu.Unlock()
	defer d.poke()
	logger := klog.FromContext(ctx)
	// The jobs first, then the claims: a claim made after the read has no
	// job in it, so nothing carved meanwhile is taken for stale.
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
		// Unknown: every job stays, accounted as the scheduler's.
		for _, j := range jobs {
			d.setLive(j.part, true)
		}
		return fmt.Errorf("list ResourceClaims: %w", err)
	}
	byPart := map[string]*resourceapi.ResourceClaim{}
	for i := range list.Items {
		byPart[claimPart(list.Items[i].UID)] = &list.Items[i]
	}
	for _, j := range jobs {
		claim := byPart[j.part]
		if claim != nil && d.stillAllocated(node, claim, j.idx, j.job) {
			d.setLive(j.part, true)
			continue
		}
		why := "its claim is gone"
		if claim != nil {
			why = fmt.Sprintf("claim %s is no longer allocated that device", klog.KObj(claim))
		}
		if err := d.fs.Remove(j.card.Name, j.job.Profile, j.job.Name); err != nil && !accelfs.IsGone(err) {
			logger.Error(err, "Kept a job whose claim is gone: rmdir refused; tried again later", "job", j.job.Name, "why", why)
			continue
		}
		logger.Info("Gave back a job", "job", j.job.Name, "card", j.card.Name, "profile", j.job.Profile, "why", why)
	}
	return nil
}

// stillAllocated says whether the claim's idx-th result of this driver is a
// device of this node at the job's card, profile and placement.
func (d *Driver) stillAllocated(node *accelfs.Node, claim *resourceapi.ResourceClaim, idx int, job accelfs.Job) bool {
	results := ourResults(claim)
	if idx >= len(results) || results[idx].Pool != d.cfg.NodeName {
		return false
	}
	p, ok := publish.Lookup(node, results[idx].Device)
	if !ok || p.Card.Name != job.Device || p.Profile.Name != job.Profile {
		return false
	}
	// A lost job holds no placement; its claim's next prepare carves it again.
	return job.Placement == nil || *job.Placement == p.Span
}

func (d *Driver) reconcileLoop(ctx context.Context) {
	if d.cfg.ReconcileEvery < 0 {
		return
	}
	t := time.NewTicker(d.cfg.ReconcileEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := d.reconcile(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Reconcile failed")
			}
		}
	}
}
