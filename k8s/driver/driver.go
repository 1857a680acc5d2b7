// Package driver is the accelfs DRA kubelet plugin: it publishes the node's
// partitionable devices, carves a claim's devices at their exact placements
// in NodePrepareResources and gives them back in NodeUnprepareResources. It
// keeps no state of its own: accelfs's jobs, named after the claims' UIDs,
// are the state, and a start reconciles them against the API server.
package driver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	cgoresource "k8s.io/client-go/kubernetes/typed/resource/v1"
	draclient "k8s.io/dynamic-resource-allocation/client"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/pending"
	"accelfs.io/k8s/publish"
)

// Config is what the plugin is started with.
type Config struct {
	FS       accelfs.Interface
	Client   kubernetes.Interface
	NodeName string
	NodeUID  types.UID // optional: looked up when empty

	// PluginDataDir holds dra.sock (default /var/lib/kubelet/plugins/accelfs.io);
	// RegistrarDir the registration socket (default /var/lib/kubelet/plugins_registry).
	PluginDataDir, RegistrarDir string

	// Fallback: node.json is re-read at least this often, should a wake-up
	// be missed (default 30 s).
	Fallback time.Duration
	// ReconcileEvery: how often jobs of claims that are gone are looked for
	// after the one look at start (default 5 min; negative: only at start).
	ReconcileEvery time.Duration
	// CDITimeout: how long NodePrepareResources waits for a carved job's
	// device to appear in the daemon's CDI specs (default 20 s).
	CDITimeout time.Duration

	// PendingEvents: post an Event on each unscheduled pod that this node's
	// tainted cards keep (package pending); the pods are watched only while
	// a card is tainted.
	PendingEvents bool
	// Pending tunes it (zero: pending's defaults); PendingClient is its
	// own client (nil: Client), so that its reads wait on a rate limit of
	// their own, never in front of a prepare's.
	Pending       pending.Options
	PendingClient kubernetes.Interface

	// PluginOptions are passed on to kubeletplugin.Start (tests).
	PluginOptions []kubeletplugin.Option
}

// Driver is a running plugin.
type Driver struct {
	cfg    Config
	fs     accelfs.Interface
	claims cgoresource.ResourceV1Interface
	helper *kubeletplugin.Helper

	// parts serializes prepare, unprepare and reconcile per claim; the
	// helper does not serialize the gRPC calls (Serialize(false)), so claims
	// are prepared in parallel across calls and within one.
	parts partLocks

	// live holds the claim parts of the claims prepared on this node (or
	// being prepared): their jobs are accounted for by the scheduler.
	liveMu sync.Mutex
	live   map[string]bool
	// devOf: the device each prepared job stands for (by job name), whose
	// health is streamed to the kubelet.
	devOf map[string]string
	// evict: devices of live claims that cannot be served (heal.go);
	// healing: lost jobs being carved again; waiting: lost jobs whose
	// heal waits for the containers given the lost instance to exit.
	evict   map[string]evictEntry
	healing map[string]bool
	waiting map[string]bool
	healed  int // lost instances carved again

	metrics metrics

	// pending tells unscheduled pods which tainted card kept them (nil: off).
	pending *pending.Explainer

	kick chan struct{}

	// reconcileFailed: the look at start failed (the loop tries again soon).
	reconcileFailed bool

	// layoutMu guards layout, the last node.json read: prepare looks its
	// devices up there.
	layoutMu sync.Mutex
	layoutOf *accelfs.Node
	// layoutNew is closed when layoutOf is replaced (the health stream waits on it).
	layoutNew chan struct{}

	pubMu     sync.Mutex
	last      *resourceslice.DriverResources
	published int // how many times the slices were (re)published

	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// Start reconciles, starts the kubelet plugin's gRPC servers and the
// publishing of the node's ResourceSlices, and returns. Stop ends it.
func Start(ctx context.Context, cfg Config) (*Driver, error) {
	logger := klog.FromContext(ctx)
	d, node, err := newDriver(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cfg, ctx, cancel := d.cfg, d.ctx, d.cancel

	// What accelfs holds of ours before anything is served: claims that still
	// exist keep their jobs, the others' jobs are given back.
	if err := d.reconcile(ctx); err != nil {
		d.reconcileFailed = true
		logger.Error(err, "Reconcile at start failed; every job is kept, as taken, until a look succeeds")
	}

	opts := []kubeletplugin.Option{
		kubeletplugin.DriverName(publish.DriverName),
		kubeletplugin.KubeClient(cfg.Client),
		kubeletplugin.NodeName(cfg.NodeName),
		kubeletplugin.Serialize(false),
	}
	if cfg.NodeUID != "" {
		opts = append(opts, kubeletplugin.NodeUID(cfg.NodeUID))
	}
	if cfg.PluginDataDir != "" {
		opts = append(opts, kubeletplugin.PluginDataDirectoryPath(cfg.PluginDataDir))
	}
	if cfg.RegistrarDir != "" {
		opts = append(opts, kubeletplugin.RegistrarDirectoryPath(cfg.RegistrarDir))
	}
	opts = append(opts, cfg.PluginOptions...)
	helper, err := kubeletplugin.Start(ctx, d, opts...)
	if err != nil {
		cancel(err)
		return nil, fmt.Errorf("start kubelet plugin: %w", err)
	}
	d.helper = helper
	if cfg.PendingEvents {
		client := cfg.PendingClient
		if client == nil {
			client = cfg.Client
		}
		d.pending = pending.Start(ctx, client, cfg.NodeName, cfg.Pending)
	}
	// After the reconcile: what it gave back is free again.
	if fresh, err := d.fs.ReadNode(); err == nil {
		node = fresh
	}
	if err := d.publish(ctx, node); err != nil {
		helper.Stop()
		cancel(err)
		return nil, err
	}

	d.wg.Add(2)
	go func() { defer d.wg.Done(); d.watchLoop(ctx) }()
	go func() { defer d.wg.Done(); d.reconcileLoop(ctx) }()
	logger.Info("Started", "node", cfg.NodeName, "driver", publish.DriverName)
	return d, nil
}

// newDriver checks the configuration and reads node.json once: the plugin
// without its gRPC servers and loops (unit tests drive it directly).
func newDriver(ctx context.Context, cfg Config) (*Driver, *accelfs.Node, error) {
	if cfg.FS == nil || cfg.Client == nil || cfg.NodeName == "" {
		return nil, nil, errors.New("driver: FS, Client and NodeName must be set")
	}
	if cfg.Fallback <= 0 {
		cfg.Fallback = 30 * time.Second
	}
	if cfg.ReconcileEvery == 0 {
		cfg.ReconcileEvery = 5 * time.Minute
	}
	if cfg.CDITimeout <= 0 {
		cfg.CDITimeout = 20 * time.Second
	}
	node, err := cfg.FS.ReadNode()
	if err != nil {
		return nil, nil, fmt.Errorf("accelfs: %w (is accelfs mounted?)", err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	return &Driver{
		cfg:       cfg,
		fs:        cfg.FS,
		claims:    draclient.New(cfg.Client),
		live:      map[string]bool{},
		devOf:     map[string]string{},
		evict:     map[string]evictEntry{},
		healing:   map[string]bool{},
		waiting:   map[string]bool{},
		layoutNew: make(chan struct{}),
		kick:      make(chan struct{}, 1),
		layoutOf:  node,
		ctx:       ctx,
		cancel:    cancel,
	}, node, nil
}

// Stop ends the plugin: its gRPC servers, the publishing, the loops. The
// published slices stay (they belong to the node; the next start takes
// them over).
func (d *Driver) Stop() {
	d.cancel(errors.New("driver stopped"))
	d.helper.Stop()
	d.wg.Wait()
}

// Done is closed when the plugin stops, by Stop or on a fatal error.
func (d *Driver) Done() <-chan struct{} { return d.ctx.Done() }

// Err says why the plugin stopped.
func (d *Driver) Err() error { return context.Cause(d.ctx) }

// Helper is the kubelet plugin helper (its registration status, for tests).
func (d *Driver) Helper() *kubeletplugin.Helper { return d.helper }

// HandleError is called for background errors (publishing, gRPC servers).
// Fatal ones stop the plugin; the rest are logged and retried.
func (d *Driver) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
	if !errors.Is(err, kubeletplugin.ErrRecoverable) {
		d.cancel(fmt.Errorf("%s: %w", msg, err))
	}
}

func (d *Driver) setLive(part string, live bool) {
	d.liveMu.Lock()
	defer d.liveMu.Unlock()
	if live {
		d.live[part] = true
	} else {
		delete(d.live, part)
		for job := range d.devOf {
			if p, _, _ := ParseJobName(job); p == part {
				delete(d.devOf, job)
				delete(d.waiting, job)
			}
		}
		for dev, e := range d.evict {
			if e.part == part {
				delete(d.evict, dev)
			}
		}
	}
}

// setDevice records which device a prepared job stands for.
func (d *Driver) setDevice(job, device string) {
	d.liveMu.Lock()
	defer d.liveMu.Unlock()
	d.devOf[job] = device
}

// layoutChanged is closed at the next new reading of node.json.
func (d *Driver) layoutChanged() <-chan struct{} {
	d.layoutMu.Lock()
	defer d.layoutMu.Unlock()
	return d.layoutNew
}

// layout is the last node.json read (by the watch, a publish, a prepare).
func (d *Driver) layout() *accelfs.Node {
	d.layoutMu.Lock()
	defer d.layoutMu.Unlock()
	return d.layoutOf
}

func (d *Driver) setLayout(n *accelfs.Node) {
	d.layoutMu.Lock()
	defer d.layoutMu.Unlock()
	if d.layoutOf == n {
		return
	}
	d.layoutOf = n
	close(d.layoutNew)
	d.layoutNew = make(chan struct{})
}

// readNode reads node.json afresh and keeps it as the layout.
func (d *Driver) readNode() (*accelfs.Node, error) {
	n, err := d.fs.ReadNode()
	if err == nil {
		d.setLayout(n)
	}
	return n, err
}

// accounted says whether a job is one of a claim prepared on this node.
func (d *Driver) accounted(job string) bool {
	part, _, ok := ParseJobName(job)
	if !ok {
		return false
	}
	d.liveMu.Lock()
	defer d.liveMu.Unlock()
	return d.live[part]
}

// ourResults are the claim's allocation results of this driver.
func ourResults(claim *resourceapi.ResourceClaim) []resourceapi.DeviceRequestAllocationResult {
	if claim.Status.Allocation == nil {
		return nil
	}
	var out []resourceapi.DeviceRequestAllocationResult
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == publish.DriverName {
			out = append(out, r)
		}
	}
	return out
}
