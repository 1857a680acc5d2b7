package driver

import (
	"context"
	"fmt"
	"time"

	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"accelfs.io/k8s/accelfs"
)

// healthResend is how often the health of the prepared devices is sent
// again when nothing changed: within the kubelet's 30 s, after which it
// reports a device's health as unknown.
var healthResend = 10 * time.Second

// WatchHealthStatus streams the health of every device prepared on this
// node (KEP-4680: the kubelet shows it in the pod's status,
// allocatedResourcesStatus, and `kubectl describe pod`): at once, at every
// new reading of node.json, and every healthResend.
func (d *Driver) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	t := time.NewTicker(healthResend)
	defer t.Stop()
	for {
		changed := d.layoutChanged()
		// Read afresh (the layout kept may predate a prepare's carve);
		// not kept as the layout, whose change is what wakes this loop.
		node, err := d.fs.ReadNode()
		if err != nil {
			node = d.layout()
		}
		report := d.healthReport(node, time.Now())
		select {
		case <-ctx.Done():
			return nil
		case reports <- report:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-t.C:
		}
	}
}

// healthReport is the health of each prepared device, from its job and its
// card in node.json: Unhealthy when the job is lost or gone (its instance is
// not there: the container cannot get it), when the job's health is failed
// (an Xid on its instance whose recovery is a reset or a reboot), or when its
// card failed; Unknown when its card is away (absent: the driver does not
// give it) or cannot be read now (refused: its jobs are as last seen, not as
// they are); Healthy otherwise, degraded said in the message.
func (d *Driver) healthReport(node *accelfs.Node, now time.Time) kubeletplugin.DeviceHealthReport {
	d.liveMu.Lock()
	devOf := make(map[string]string, len(d.devOf))
	for job, dev := range d.devOf {
		devOf[job] = dev
	}
	d.liveMu.Unlock()
	report := kubeletplugin.DeviceHealthReport{Devices: []kubeletplugin.DeviceHealth{}}
	for job, dev := range devOf {
		h, msg := jobHealth(node, job)
		report.Devices = append(report.Devices, kubeletplugin.DeviceHealth{
			PoolName: d.cfg.NodeName, DeviceName: dev, Health: h, LastUpdated: now, Message: msg,
		})
	}
	return report
}

func jobHealth(node *accelfs.Node, name string) (kubeletplugin.HealthStatus, string) {
	var card *accelfs.Device
	var job *accelfs.Job
	for i := range node.Devices {
		if j := node.Devices[i].Job(name); j != nil {
			card, job = &node.Devices[i], j
			break
		}
	}
	switch {
	case job == nil:
		return kubeletplugin.HealthStatusUnhealthy, fmt.Sprintf("job %s is gone from accelfs", name)
	case job.State == accelfs.StateLost:
		return kubeletplugin.HealthStatusUnhealthy, fmt.Sprintf("job %s is lost: %s", name, deref(job.Reason))
	case card.Condition() == accelfs.CondAbsent:
		return kubeletplugin.HealthStatusUnknown, fmt.Sprintf("card %s is away: %s", card.Name, deref(card.Refusal))
	case card.Condition() == accelfs.CondRefused:
		return kubeletplugin.HealthStatusUnknown, fmt.Sprintf("card %s cannot be read now: %s", card.Name, deref(card.Refusal))
	case card.Condition() == accelfs.CondFailed:
		return kubeletplugin.HealthStatusUnhealthy, fmt.Sprintf("card %s failed: %s", card.Name, card.ConditionWhy())
	case job.Health != nil && job.Health.State == accelfs.HealthFailed:
		return kubeletplugin.HealthStatusUnhealthy, healthWhy("instance failed", job.Health)
	case job.Health != nil && job.Health.State == accelfs.HealthDegraded:
		return kubeletplugin.HealthStatusHealthy, healthWhy("instance degraded", job.Health)
	case card.Condition() == accelfs.CondDegraded:
		return kubeletplugin.HealthStatusHealthy, fmt.Sprintf("card %s degraded: %s", card.Name, card.ConditionWhy())
	}
	return kubeletplugin.HealthStatusHealthy, ""
}

func healthWhy(what string, h *accelfs.Health) string {
	s := what
	if h.Xid != nil {
		s += fmt.Sprintf(" (Xid %d)", *h.Xid)
	}
	if h.Why != nil {
		s += ": " + *h.Why
	}
	if h.Recovery != nil && *h.Recovery != "" {
		s += "; recovery: " + *h.Recovery
	}
	return s
}
