package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/publish"
)

// PrepareResourceClaims carves every device of each claim at its exact
// placement (NodePrepareResources). A claim's result is its CDI devices,
// answered once the daemon's CDI specs list them, or an error: the kubelet
// then tries again, and a repeated call finds the jobs already made.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	results := make([]kubeletplugin.PrepareResult, len(claims))
	var wg sync.WaitGroup
	for i, claim := range claims {
		wg.Go(func() {
			defer d.parts.lock(claimPart(claim.UID))()
			start := time.Now()
			results[i] = d.prepareClaim(ctx, claim)
			d.metrics.observe(&d.metrics.prepare, &d.metrics.prepareErrors, start, results[i].Err)
		})
	}
	wg.Wait()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for i, claim := range claims {
		out[claim.UID] = results[i]
	}
	return out, nil
}

type carvedJob struct{ card, profile, job string }

func (d *Driver) prepareClaim(ctx context.Context, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim), "uid", claim.UID)
	results := ourResults(claim)
	if len(results) == 0 {
		return kubeletplugin.PrepareResult{}
	}
	// Accounted before the carve: the job's slices are the claim's in the
	// scheduler's view from the moment the job exists.
	d.setLive(claimPart(claim.UID), true)
	var carved []carvedJob
	var devices []kubeletplugin.Device
	var jobs []string
	t0 := time.Now()
	for i, r := range results {
		job := JobName(claim.UID, i)
		if err := d.prepareDevice(r, job, &carved); err != nil {
			d.rollback(ctx, carved)
			if errors.Is(err, syscall.ENOSPC) {
				if node, rerr := d.readNode(); rerr == nil && heldOutside(node, r.Device) {
					d.setEvict(claimPart(claim.UID), r.Device, evictTaken)
					err = unservable(err)
				}
			}
			return kubeletplugin.PrepareResult{Err: fmt.Errorf("device %s of request %s (job %s): %w", r.Device, r.Request, job, err)}
		}
		jobs = append(jobs, job)
		devices = append(devices, kubeletplugin.Device{
			Requests:     []string{r.Request},
			PoolName:     r.Pool,
			DeviceName:   r.Device,
			CDIDeviceIDs: []string{accelfs.CDIDeviceID(job)},
		})
	}
	t1 := time.Now()
	for _, job := range jobs {
		if err := d.waitCDI(ctx, job); err != nil {
			d.rollback(ctx, carved)
			return kubeletplugin.PrepareResult{Err: err}
		}
	}
	for i, job := range jobs {
		d.setDevice(job, results[i].Device)
		d.clearEvict(results[i].Device)
	}
	// The carve and the CDI wait, for the timeline of a pod's start
	// (docs/performance.md): what the plugin adds between the kubelet's
	// call and the container.
	logger.V(2).Info("Prepared", "jobs", jobs, "carved", len(carved),
		"carveMs", t1.Sub(t0).Milliseconds(), "cdiMs", time.Since(t1).Milliseconds())
	return kubeletplugin.PrepareResult{Devices: devices}
}

// prepareDevice makes sure job exists, ready, at the placement the device
// stands for: made now (appended to carved), or already there.
//
// The common case costs one mkdir: the device is looked up in the last
// node.json read (a device name stands for a card's profile and placement,
// which change only with the card's MIG mode, and a stale answer only makes
// the mkdir fail), and mkdir placements/<start>/<job> carves exactly there
// or fails (docs/tree.md), so nothing is read before or after it. Only an
// EEXIST (a repeated call, a job lost or left elsewhere) reads the job's
// status, and node.json when the job is not that placement's.
func (d *Driver) prepareDevice(r resourceapi.DeviceRequestAllocationResult, job string, carved *[]carvedJob) error {
	if r.Pool != d.cfg.NodeName {
		return fmt.Errorf("pool %q is not this node's (%q)", r.Pool, d.cfg.NodeName)
	}
	if r.AdminAccess != nil && *r.AdminAccess {
		return errors.New("admin access is not supported: a device is a whole MIG instance, carved for one claim")
	}
	p, ok := publish.Lookup(d.layout(), r.Device)
	if !ok {
		node, err := d.readNode()
		if err != nil {
			return fmt.Errorf("accelfs: %w", err)
		}
		if p, ok = publish.Lookup(node, r.Device); !ok {
			return errors.New("no such device on this node now (its card went away or changed MIG mode)")
		}
	}
	card, profile := p.Card.Name, p.Profile.Name
	err := d.fs.CarveAt(card, profile, p.Span.Start, job)
	if errors.Is(err, syscall.EEXIST) {
		if st, serr := d.fs.Status(card, profile, job); serr == nil && st.State == accelfs.StateReady && st.Placement == p.Span {
			return nil // a repeated call, or one that raced this one: the job is the claim's
		}
		switch err = d.replace(card, profile, p.Span, job); {
		case errors.Is(err, errReady):
			return nil
		case err == nil:
			err = d.fs.CarveAt(card, profile, p.Span.Start, job)
		}
	}
	if err != nil {
		return err
	}
	*carved = append(*carved, carvedJob{card, profile, job})
	return nil
}

// errReady: the job is already ready at that placement.
var errReady = errors.New("ready")

// replace clears the way for job at that placement: a job of that name
// that is not ready there was lost (its instance went with a reboot) or
// left by an earlier allocation of this claim, and the current allocation
// decides. One being removed is waited for (the kubelet tries again).
func (d *Driver) replace(card, profile string, span accelfs.Span, job string) error {
	node, err := d.readNode()
	if err != nil {
		return fmt.Errorf("accelfs: %w", err)
	}
	j := node.FindJob(job)
	if j == nil {
		return nil // gone meanwhile
	}
	same := j.Device == card && j.Profile == profile && j.Placement != nil && *j.Placement == span
	switch {
	case same && j.State == accelfs.StateReady:
		return errReady // its status could not be read a moment ago
	case same && j.State == accelfs.StateRemoving:
		return fmt.Errorf("job %s is being removed (%s): try again", job, deref(j.Reason))
	}
	if err := d.fs.Remove(j.Device, j.Profile, job); err != nil && !accelfs.IsGone(err) {
		return fmt.Errorf("give back the job's %s state first: %w", j.State, err)
	}
	return nil
}

// rollback gives back what this call carved, so that a claim that cannot be
// prepared holds nothing while the kubelet retries.
func (d *Driver) rollback(ctx context.Context, carved []carvedJob) {
	for _, c := range carved {
		if err := d.fs.Remove(c.card, c.profile, c.job); err != nil && !accelfs.IsGone(err) {
			klog.FromContext(ctx).Error(err, "Could not give back a job of a claim that failed to prepare", "job", c.job)
		}
	}
}

// waitCDI waits until the daemon's CDI specs list the job: the runtime
// resolves accelfs.io/mig=<job> when it creates the container.
func (d *Driver) waitCDI(ctx context.Context, job string) error {
	deadline := time.Now().Add(d.cfg.CDITimeout)
	wait := 10 * time.Millisecond
	for {
		ok, err := d.fs.HasCDIDevice(job)
		if err != nil {
			return fmt.Errorf("read the CDI specs: %w", err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job %s was carved but accelfs's CDI specs do not list %s after %s: "+
				"accelfs writes no spec without its OCI hook (accelfs-hook beside accelfs, or --hook), "+
				"and the plugin must read the daemon's --cdi-dir", job, accelfs.CDIDeviceID(job), d.cfg.CDITimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
