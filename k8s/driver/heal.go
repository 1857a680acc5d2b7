package driver

import (
	"context"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/publish"
)

// Why a device is tainted accelfs.io/unservable (the taint's value).
const (
	evictTaken = "taken" // its placement is held by something Kubernetes did not place
	evictLost  = "lost"  // its lost instance could not be carved again
)

type evictEntry struct{ part, why string }

// setEvict marks a device of a live claim as one the plugin cannot serve:
// it is published with a NoExecute taint until the claim is unprepared.
func (d *Driver) setEvict(part, device, why string) {
	d.liveMu.Lock()
	_, had := d.evict[device]
	d.evict[device] = evictEntry{part, why}
	d.liveMu.Unlock()
	if !had {
		d.metrics.add(&d.metrics.evicted)
	}
	d.poke()
}

func (d *Driver) clearEvict(device string) {
	d.liveMu.Lock()
	_, had := d.evict[device]
	delete(d.evict, device)
	d.liveMu.Unlock()
	if had {
		d.poke()
	}
}

// evicted is publish.Options.Evict.
func (d *Driver) evicted(device string) (string, bool) {
	d.liveMu.Lock()
	defer d.liveMu.Unlock()
	e, ok := d.evict[device]
	return e.why, ok
}

// heldOutside says whether something other than this plugin's jobs holds a
// slice of the placement the device stands for: a job carved outside
// Kubernetes, or an instance accelfs did not make. One of this plugin's
// own jobs being given back (busy at its unprepare) is not: it goes, and
// the kubelet's retry then carves.
func heldOutside(node *accelfs.Node, device string) bool {
	p, ok := publish.Lookup(node, device)
	if !ok {
		return false
	}
	for _, in := range p.Card.Instances {
		if !in.Placement.Overlaps(p.Span) {
			continue
		}
		if in.Job == nil {
			return true
		}
		if _, _, ours := ParseJobName(*in.Job); !ours {
			return true
		}
	}
	return false
}

// heal carves again, at their placements, the lost instances of claims
// prepared on this node (an instance destroyed under a running pod, a
// reboot under a kubelet that keeps the claim prepared): the job of that
// name is made again, so its CDI device resolves when the container
// restarts. When it cannot be carved (the placement was taken meanwhile),
// the device is tainted NoExecute, so that the pod is evicted and
// scheduled again.
func (d *Driver) heal(ctx context.Context, node *accelfs.Node) {
	for _, card := range node.Devices {
		for _, j := range card.Jobs {
			if j.State != accelfs.StateLost || !d.accounted(j.Name) {
				continue
			}
			d.liveMu.Lock()
			dev, known := d.devOf[j.Name]
			busy := d.healing[j.Name]
			if known && !busy {
				d.healing[j.Name] = true
			}
			d.liveMu.Unlock()
			if !known || busy {
				continue
			}
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				defer func() {
					d.liveMu.Lock()
					delete(d.healing, j.Name)
					d.liveMu.Unlock()
				}()
				d.healJob(ctx, j.Name, dev)
			}()
		}
	}
}

func (d *Driver) healJob(ctx context.Context, job, device string) {
	logger := klog.FromContext(ctx).WithValues("job", job, "device", device)
	part, _, _ := ParseJobName(job)
	defer d.parts.lock(part)()
	if !d.accounted(job) {
		return // unprepared meanwhile
	}
	if d.heldByContainers(ctx, job, device) {
		return
	}
	r := resourceapi.DeviceRequestAllocationResult{Driver: publish.DriverName, Pool: d.cfg.NodeName, Device: device}
	var carved []carvedJob
	err := d.prepareDevice(r, job, &carved)
	if err == nil {
		err = d.waitCDI(ctx, job)
	}
	if err != nil {
		d.rollback(ctx, carved)
		logger.Error(err, "A lost instance of a running claim cannot be carved again: its device is tainted "+publish.TaintUnservable+"=lost:NoExecute, so that its pod is evicted and scheduled again")
		d.setEvict(part, device, evictLost)
		return
	}
	if len(carved) > 0 {
		d.healed++
		d.metrics.add(&d.metrics.healed)
		logger.Info("Carved a lost instance again at its placement")
	}
}

// heldByContainers says whether the lost job is still attached to the
// containers that were given its instance (the pod's container, running on
// without it): accelfs refuses to remove the job's record until they exit
// (EBUSY, docs/tree.md), so it cannot be carved again yet. That is no reason
// to evict the pod: the heal waits, and the attachment clearing when the
// container exits changes node.json, which calls heal again, before the
// kubelet's restart of the container resolves its CDI device (a restart that
// comes first fails and is retried by the kubelet).
func (d *Driver) heldByContainers(ctx context.Context, job, device string) bool {
	p, ok := publish.Lookup(d.layout(), device)
	if !ok {
		return false
	}
	st, err := d.fs.Status(p.Card.Name, p.Profile.Name, job)
	held := err == nil && st.State == accelfs.StateLost && len(st.Containers) > 0
	d.liveMu.Lock()
	logged := d.waiting[job]
	if held {
		d.waiting[job] = true
	} else {
		delete(d.waiting, job)
	}
	d.liveMu.Unlock()
	if held && !logged {
		klog.FromContext(ctx).Info("A lost instance of a running claim is carved again once the containers given it exit",
			"job", job, "device", device, "containers", len(st.Containers))
	}
	return held
}

// unservable is the error of a prepare whose placement is held outside
// Kubernetes: the device is tainted so the pod is scheduled again.
func unservable(err error) error {
	return fmt.Errorf("%w; the placement is held outside Kubernetes: the device is tainted %s=%s:NoExecute, "+
		"so that the pod is evicted and scheduled again", err, publish.TaintUnservable, evictTaken)
}
