package driver

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/publish"
)

type nodeEvent struct {
	node *accelfs.Node
	err  error
}

// watchLoop republishes whenever node.json changes (a wake-up from poll, or
// the periodic re-read) and after every unprepare and reconcile.
func (d *Driver) watchLoop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	events := make(chan nodeEvent, 1)
	d.wg.Add(1)
	go func() { defer d.wg.Done(); d.watchNode(ctx, events) }()
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if ev.err != nil {
				if ev.err.Error() != lastErr {
					logger.Error(ev.err, "Cannot read node.json; the published devices stay as they are until it reads again")
					lastErr = ev.err.Error()
				}
				continue
			}
			if lastErr != "" {
				logger.Info("node.json reads again")
				lastErr = ""
			}
			if err := d.publish(ctx, ev.node); err != nil {
				logger.Error(err, "Publish")
			}
			d.heal(ctx, ev.node)
		case <-d.kick:
			node, err := d.fs.ReadNode()
			if err == nil {
				err = d.publish(ctx, node)
			}
			if err != nil {
				logger.Error(err, "Publish")
			}
		}
	}
}

// settleDelay is how long a wake-up on node.json waits before reading it.
const settleDelay = 100 * time.Millisecond

// watchNode keeps a watch open on node.json and hands every reading to the
// loop, the newest replacing one not yet taken. A watch that fails (the
// daemon restarted: the old descriptor is dead) is opened again.
func (d *Driver) watchNode(ctx context.Context, events chan nodeEvent) {
	send := func(ev nodeEvent) {
		select {
		case events <- ev:
		default:
			select {
			case <-events:
			default:
			}
			events <- ev
		}
	}
	for ctx.Err() == nil {
		w, err := d.fs.Watch()
		if err != nil {
			send(nodeEvent{err: err})
		} else {
			for ctx.Err() == nil {
				node, err := w.Read()
				send(nodeEvent{node: node, err: err})
				if err != nil {
					break
				}
				if err := w.Wait(ctx, d.cfg.Fallback); err != nil {
					if ctx.Err() == nil {
						send(nodeEvent{err: fmt.Errorf("wait on node.json: %w", err)})
					}
					break
				}
				// A change comes in bursts (a prepare's carve, pods started
				// one after another): read once the burst has passed, not
				// beside each carve, whose prepare is waiting on the CPU.
				select {
				case <-ctx.Done():
				case <-time.After(settleDelay):
				}
			}
			_ = w.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// publish builds the pool from node.json and hands it to the ResourceSlice
// controller when it differs from what was handed last.
func (d *Driver) publish(ctx context.Context, node *accelfs.Node) error {
	d.setLayout(node)
	if d.pending != nil {
		d.pending.Update(node)
	}
	res := publish.Build(node, publish.Options{PoolName: d.cfg.NodeName, Accounted: d.accounted, Evict: d.evicted})
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	if d.last != nil && apiequality.Semantic.DeepEqual(*d.last, res.Resources) {
		return nil
	}
	if err := d.helper.PublishResources(ctx, res.Resources); err != nil {
		return fmt.Errorf("publish ResourceSlices: %w", err)
	}
	last := res.Resources.DeepCopy()
	d.last = last
	d.published++
	klog.FromContext(ctx).Info("Published devices", "generation", node.Generation, "offered", res.Offered, "withheld", res.Withheld, "notes", res.Notes)
	return nil
}

// Published says how many times the pool was handed to the ResourceSlice
// controller, and what it was last.
func (d *Driver) Published() (int, *resourceslice.DriverResources) {
	d.pubMu.Lock()
	defer d.pubMu.Unlock()
	return d.published, d.last
}
