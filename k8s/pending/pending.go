// Package pending tells a pod that waits unscheduled which of this node's
// accelfs taints kept it: the scheduler says only "cannot allocate all
// claims" (upstream's dynamicresources plugin names no device taint), so a
// user would have to read every node's ResourceSlices to learn that a card
// is cordoned, draining, waiting for a mode change or failed.
//
// Each node's plugin watches the cluster's unscheduled pods only while one
// of its own cards is tainted NoSchedule or NoExecute (a node with no such
// card costs the API server nothing), and posts one Warning Event on each
// pod that the scheduler found unschedulable, whose claims ask for an
// accelfs class that one of those cards offers, and that tolerate none of
// the card's taints. One Event per pod and taint set, again after Refresh;
// at most Burst at once and QPS a second after that per node, so that a
// cordon under a thousand pending pods does not flood the API server.
package pending

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/klog/v2"

	"accelfs.io/k8s/accelfs"
	"accelfs.io/k8s/publish"
)

// Reason is the Event's reason (kubectl describe pod's Reason column).
const Reason = "AccelfsDevicesTainted"

// Component is the Event's source.
const Component = "accelfs-dra"

// Defaults of Options.
const (
	DefaultQPS     = 1
	DefaultBurst   = 10
	DefaultRefresh = 30 * time.Minute // the API server keeps Events 1 h (--event-ttl)
	DefaultResync  = 5 * time.Minute
	maxMessage     = 1024 // events.k8s.io's note limit; core Events are shown the same
)

// Options tune the explainer; zero values take the defaults.
type Options struct {
	QPS     float32
	Burst   int
	Refresh time.Duration // an Event for the same pod and taints is posted again after this
	Resync  time.Duration // every pending pod is looked at again this often
	Now     func() time.Time
}

// card is one of this node's tainted cards as a pending pod sees it.
type card struct {
	name, condition, why string
	taints               []resourceapi.DeviceTaint
	classes              map[string]bool // the DeviceClasses of its profiles
}

// want is one request (or subrequest) of a pod's claims for an accelfs class.
type want struct {
	claim, request, class string
	tolerations           []resourceapi.DeviceToleration
}

type posted struct {
	sig string
	at  time.Time
}

// Explainer is one node's: Update it with every node.json read.
type Explainer struct {
	client  kubernetes.Interface
	node    string
	opts    Options
	limiter flowcontrol.RateLimiter
	queue   workqueue.TypedDelayingInterface[string]
	ctx     context.Context

	mu      sync.Mutex
	cards   []card
	cardSig string
	posted  map[types.UID]posted
	wants   map[types.UID][]want // a pod's claims' specs are immutable: read once
	store   cache.Store          // nil while no card is tainted
	stop    context.CancelFunc
	events  int // Events posted
	delayed int // Events put off by the rate limit (posted later)
	failed  int // Events the API server refused (tried again)
}

// Start makes the explainer of node; it does nothing until Update sees a tainted card.
func Start(ctx context.Context, client kubernetes.Interface, node string, opts Options) *Explainer {
	if opts.QPS <= 0 {
		opts.QPS = DefaultQPS
	}
	if opts.Burst <= 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	e := &Explainer{
		client: client, node: node, opts: opts, ctx: ctx,
		limiter: flowcontrol.NewTokenBucketRateLimiter(opts.QPS, opts.Burst),
		queue:   workqueue.NewTypedDelayingQueue[string](),
		posted:  map[types.UID]posted{},
		wants:   map[types.UID][]want{},
	}
	go func() { <-ctx.Done(); e.queue.ShutDown() }()
	go e.work()
	return e
}

// Posted says how many Events were posted.
func (e *Explainer) Posted() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events
}

// Counts are what the plugin's metrics show of the explainer: Events
// posted, put off by the rate limit, and refused by the API server.
func (e *Explainer) Counts() (posted, delayed, failed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events, e.delayed, e.failed
}

// Watching says whether unscheduled pods are watched (a card is tainted).
func (e *Explainer) Watching() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.store != nil
}

// tainted lists the cards whose published devices carry a taint that keeps
// new claims off (NoSchedule, NoExecute), as publish.Build publishes them.
func tainted(node *accelfs.Node) []card {
	var out []card
	for i := range node.Devices {
		d := &node.Devices[i]
		if d.Slices() == 0 || !d.OK() || !d.MigEnabled() {
			continue // no device published: nothing the scheduler could have been kept from
		}
		var keep []resourceapi.DeviceTaint
		for _, t := range publish.Taints(d) {
			if t.Effect == resourceapi.DeviceTaintEffectNoSchedule || t.Effect == resourceapi.DeviceTaintEffectNoExecute {
				keep = append(keep, t)
			}
		}
		if len(keep) == 0 {
			continue
		}
		c := card{name: d.Name, condition: d.Condition(), why: d.ConditionWhy(), taints: keep, classes: map[string]bool{}}
		for _, p := range d.Profiles {
			c.classes[publish.ClassName(p.Name)] = true
		}
		out = append(out, c)
	}
	return out
}

func taintString(t resourceapi.DeviceTaint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}

func signature(cards []card) string {
	var parts []string
	for _, c := range cards {
		for _, t := range c.taints {
			parts = append(parts, c.name+" "+taintString(t))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// Update takes the node's cards as node.json says now: the watch of
// unscheduled pods is opened while a card is tainted and closed when none is;
// a changed taint set looks at every pending pod again.
func (e *Explainer) Update(node *accelfs.Node) {
	cards := tainted(node)
	sig := signature(cards)
	e.mu.Lock()
	defer e.mu.Unlock()
	if sig == e.cardSig && (len(cards) == 0) == (e.store == nil) {
		return
	}
	e.cards, e.cardSig = cards, sig
	switch {
	case len(cards) == 0 && e.store != nil:
		e.stop()
		e.store, e.stop = nil, nil
		e.posted = map[types.UID]posted{}
		e.wants = map[types.UID][]want{}
		klog.FromContext(e.ctx).V(2).Info("No accelfs card tainted: unscheduled pods no longer watched")
	case len(cards) > 0 && e.store == nil:
		e.watch()
		klog.FromContext(e.ctx).V(2).Info("An accelfs card is tainted: unscheduled pods watched", "taints", sig)
	case len(cards) > 0:
		for _, key := range e.store.ListKeys() {
			e.queue.Add(key)
		}
	}
}

// watch opens the informer of the cluster's unscheduled pods (with e.mu held).
func (e *Explainer) watch() {
	ctx, stop := context.WithCancel(e.ctx)
	inf := coreinformers.NewFilteredPodInformer(e.client, metav1.NamespaceAll, e.opts.Resync, cache.Indexers{},
		func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" })
	// Only what explain reads is kept: a thousand pending pods stay small.
	_ = inf.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			p.ManagedFields = nil
			p.Spec.Containers, p.Spec.InitContainers = resourcesOnly(p.Spec.Containers), resourcesOnly(p.Spec.InitContainers)
			p.Spec.Volumes = nil
			p.Status.ContainerStatuses, p.Status.InitContainerStatuses = nil, nil
		}
		return obj, nil
	})
	add := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			e.queue.Add(key)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		UpdateFunc: func(_, obj any) { add(obj) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				e.forget(p.UID)
			}
		},
	})
	e.store, e.stop = inf.GetStore(), stop
	go inf.RunWithContext(ctx)
}

// resourcesOnly keeps of each container what podWants reads: its resources.
func resourcesOnly(cs []corev1.Container) []corev1.Container {
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Resources: c.Resources}
	}
	return out
}

func (e *Explainer) forget(uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.posted, uid)
	delete(e.wants, uid)
}

func (e *Explainer) work() {
	for {
		key, quit := e.queue.Get()
		if quit {
			return
		}
		e.mu.Lock()
		store := e.store
		e.mu.Unlock()
		if store != nil {
			if obj, ok, _ := store.GetByKey(key); ok {
				if retry := e.explain(obj.(*corev1.Pod)); retry {
					e.queue.AddAfter(key, time.Duration(float32(time.Second)/e.opts.QPS))
				}
			}
		}
		e.queue.Done(key)
	}
}

// unschedulable: the scheduler tried the pod and found no place for it.
func unschedulable(pod *corev1.Pod) bool {
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// explain posts the pod's Event when this node's tainted cards keep it;
// true: try again later (the rate limit, or an API error).
func (e *Explainer) explain(pod *corev1.Pod) bool {
	if !unschedulable(pod) {
		e.forget(pod.UID)
		return false
	}
	wants, err := e.podWants(pod)
	if err != nil {
		klog.FromContext(e.ctx).V(2).Info("Cannot read a pending pod's claims", "pod", klog.KObj(pod), "err", err)
		return !errors.IsNotFound(err)
	}
	e.mu.Lock()
	cards := e.cards
	e.mu.Unlock()
	msg, sig := message(e.node, cards, wants)
	if sig == "" {
		return false
	}
	now := e.opts.Now()
	e.mu.Lock()
	last, seen := e.posted[pod.UID]
	e.mu.Unlock()
	if seen && last.sig == sig && now.Sub(last.at) < e.opts.Refresh {
		return false
	}
	if !e.limiter.TryAccept() {
		e.mu.Lock()
		e.delayed++
		e.mu.Unlock()
		return true
	}
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, now.UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: Reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: Component, Host: e.node},
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Count: 1,
	}
	if _, err := e.client.CoreV1().Events(pod.Namespace).Create(e.ctx, ev, metav1.CreateOptions{}); err != nil {
		klog.FromContext(e.ctx).Error(err, "Cannot post the Event of a pod kept by tainted cards", "pod", klog.KObj(pod))
		e.mu.Lock()
		e.failed++
		e.mu.Unlock()
		return e.ctx.Err() == nil
	}
	e.mu.Lock()
	if e.store != nil { // not forgotten by a close meanwhile
		e.posted[pod.UID] = posted{sig: sig, at: now}
	}
	e.events++
	e.mu.Unlock()
	klog.FromContext(e.ctx).V(2).Info("Told a pending pod why", "pod", klog.KObj(pod), "taints", sig)
	return false
}

// podWants reads the pod's claims once: the requests for an accelfs class.
func (e *Explainer) podWants(pod *corev1.Pod) ([]want, error) {
	e.mu.Lock()
	w, ok := e.wants[pod.UID]
	e.mu.Unlock()
	if ok {
		return w, nil
	}
	// A plain limit on a profile's extended resource (accelfs.io/mig-4g.48gb) is a request
	// of its class the scheduler makes a claim of, with no toleration, once it places the pod.
	out := extendedWants(pod)
	generated := map[string]*string{}
	for _, s := range pod.Status.ResourceClaimStatuses {
		generated[s.Name] = s.ResourceClaimName
	}
	for _, ref := range pod.Spec.ResourceClaims {
		name := ref.ResourceClaimName
		if name == nil {
			name = generated[ref.Name]
		}
		if name == nil {
			// Not made from its template yet (or needs none): nothing to say until it is.
			return nil, errors.NewNotFound(resourceapi.Resource("resourceclaims"), ref.Name)
		}
		claim, err := e.client.ResourceV1().ResourceClaims(pod.Namespace).Get(e.ctx, *name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out = append(out, claimWants(claim)...)
	}
	e.mu.Lock()
	if e.store != nil {
		e.wants[pod.UID] = out
	}
	e.mu.Unlock()
	return out, nil
}

// extendedWants: the pod's limits and requests of accelfs's extended resources
// (publish.ExtendedResourceName), each standing for its profile's class.
func extendedWants(pod *corev1.Pod) []want {
	var out []want
	seen := map[string]bool{}
	prefix := publish.DriverName + "/mig-"
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name := range list {
				if n := string(name); strings.HasPrefix(n, prefix) && !seen[n] {
					seen[n] = true
					out = append(out, want{"", n, strings.TrimPrefix(n, prefix) + "." + publish.DriverName, nil})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].request < out[j].request })
	return out
}

// isOurs: a class of accelfs-dra classes (mig.accelfs.io, <profile>.accelfs.io).
func isOurs(class string) bool { return strings.HasSuffix(class, "."+publish.DriverName) }

func claimWants(claim *resourceapi.ResourceClaim) []want {
	var out []want
	for _, r := range claim.Spec.Devices.Requests {
		if r.Exactly != nil && isOurs(r.Exactly.DeviceClassName) {
			out = append(out, want{claim.Name, r.Name, r.Exactly.DeviceClassName, r.Exactly.Tolerations})
		}
		for _, s := range r.FirstAvailable {
			if isOurs(s.DeviceClassName) {
				out = append(out, want{claim.Name, r.Name + "/" + s.Name, s.DeviceClassName, s.Tolerations})
			}
		}
	}
	return out
}

// kept: the taints of c that no toleration of w tolerates.
func kept(c card, w want) []resourceapi.DeviceTaint {
	var out []resourceapi.DeviceTaint
	for _, t := range c.taints {
		ok := false
		for _, tol := range w.tolerations {
			if resourceclaim.ToleratesTaint(tol, t) {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, t)
		}
	}
	return out
}

// message is the Event's text and its signature ("" when none of the cards
// keeps any of the requests: a card that offers the request's class and
// carries a taint the request does not tolerate).
func message(node string, cards []card, wants []want) (string, string) {
	var lines, sigs []string
	var reqs []string
	seenReq := map[string]bool{}
	for _, c := range cards {
		var taints []string
		seen := map[string]bool{}
		for _, w := range wants {
			if w.class != publish.AnyClass && !c.classes[w.class] {
				continue
			}
			ks := kept(c, w)
			for _, t := range ks {
				if s := taintString(t); !seen[s] {
					seen[s] = true
					taints = append(taints, s)
				}
			}
			if len(ks) > 0 {
				r := w.claim + "/" + w.request
				if w.claim == "" {
					r = "the limit " + w.request
				}
				if !seenReq[r] {
					seenReq[r] = true
					reqs = append(reqs, r)
				}
			}
		}
		if len(taints) == 0 {
			continue
		}
		line := fmt.Sprintf("%s %s (taint %s)", c.name, c.condition, strings.Join(taints, ", "))
		if c.why != "" {
			line += ": " + c.why
		}
		lines = append(lines, line)
		sigs = append(sigs, c.name+" "+strings.Join(taints, ","))
	}
	if len(lines) == 0 {
		return "", ""
	}
	msg := fmt.Sprintf("node %s: %s. The scheduler places no new claim there until that clears; not tolerated by: %s",
		node, strings.Join(lines, "; "), strings.Join(reqs, ", "))
	if len(msg) > maxMessage {
		msg = msg[:maxMessage-3] + "..."
	}
	return msg, strings.Join(sigs, ";")
}
