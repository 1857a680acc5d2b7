package driver

import (
	"context"
	"errors"
	"fmt"
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
	d.opMu.Lock()
	defer d.opMu.Unlock()
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		out[claim.UID] = d.prepareClaim(ctx, claim)
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
	node, err := d.fs.ReadNode()
	if err != nil {
		return kubeletplugin.PrepareResult{Err: fmt.Errorf("accelfs: %w", err)}
	}
	var carved []carvedJob
	var devices []kubeletplugin.Device
	var jobs []string
	for i, r := range results {
		job := JobName(claim.UID, i)
		if err := d.prepareDevice(node, r, job, &carved); err != nil {
			d.rollback(ctx, carved)
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
	for _, job := range jobs {
		if err := d.waitCDI(ctx, job); err != nil {
			d.rollback(ctx, carved)
			return kubeletplugin.PrepareResult{Err: err}
		}
	}
	logger.V(2).Info("Prepared", "jobs", jobs, "carved", len(carved))
	return kubeletplugin.PrepareResult{Devices: devices}
}

// prepareDevice makes sure job exists, ready, at the placement the device
// stands for: made now (appended to carved), or already there.
func (d *Driver) prepareDevice(node *accelfs.Node, r resourceapi.DeviceRequestAllocationResult, job string, carved *[]carvedJob) error {
	if r.Pool != d.cfg.NodeName {
		return fmt.Errorf("pool %q is not this node's (%q)", r.Pool, d.cfg.NodeName)
	}
	if r.AdminAccess != nil && *r.AdminAccess {
		return errors.New("admin access is not supported: a device is a whole MIG instance, carved for one claim")
	}
	p, ok := publish.Lookup(node, r.Device)
	if !ok {
		return errors.New("no such device on this node now (its card went away or changed MIG mode)")
	}
	card, profile := p.Card.Name, p.Profile.Name
	if j := node.FindJob(job); j != nil {
		same := j.Device == card && j.Profile == profile && j.Placement != nil && *j.Placement == p.Span
		switch {
		case same && j.State == accelfs.StateReady:
			return nil // a repeated call: the job is the claim's
		case same && j.State == accelfs.StateRemoving:
			return fmt.Errorf("job %s is being removed (%s): try again", job, deref(j.Reason))
		default:
			// Lost (its instance went with a reboot), or left by an earlier
			// allocation of this claim: the current allocation decides.
			if err := d.fs.Remove(j.Device, j.Profile, job); err != nil && !accelfs.IsGone(err) {
				return fmt.Errorf("give back the job's %s state first: %w", j.State, err)
			}
		}
	}
	err := d.fs.CarveAt(card, profile, p.Span.Start, job)
	if errors.Is(err, syscall.EEXIST) {
		// Made meanwhile (a repeated call that raced this one): fine if it is this placement.
		if st, serr := d.fs.Status(card, profile, job); serr == nil && st.State == accelfs.StateReady && st.Placement == p.Span {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	*carved = append(*carved, carvedJob{card, profile, job})
	st, err := d.fs.Status(card, profile, job)
	if err != nil {
		return fmt.Errorf("read the new job's status: %w", err)
	}
	if st.Placement != p.Span || st.Profile != profile || st.Device != card {
		return fmt.Errorf("accelfs carved %s %s at %s, not %s %s at %s", st.Device, st.Profile, st.Placement, card, profile, p.Span)
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
