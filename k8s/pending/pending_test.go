package pending

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"accelfs.io/k8s/accelfs"
)

// smallNode: ppu0 (T-Head, 4g.48gb and 8g.96gb), ppu1 refused, gpu0 (H200), gpu1 MIG off.
func smallNode(t *testing.T, set func(n *accelfs.Node)) *accelfs.Node {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "accelfs", "testdata", "node-small.json"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := accelfs.ParseNode(data)
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(n)
	}
	return n
}

func cordon(card string) func(*accelfs.Node) {
	return func(n *accelfs.Node) {
		c := n.Card(card)
		c.Cordon = true
		c.Admits = &accelfs.Admits{Condition: accelfs.CondCordoned, Why: ptr.To(card + " is cordoned (echo 0 > " + card + "/mig/cordon)")}
	}
}

func fail(card string) func(*accelfs.Node) {
	return func(n *accelfs.Node) {
		n.Card(card).Admits = &accelfs.Admits{Condition: accelfs.CondFailed, Why: ptr.To("Xid 79: fallen off the bus")}
		n.Card(card).Health = &accelfs.Health{State: accelfs.HealthFailed, Xid: ptr.To(79)}
	}
}

func claim(name, class string, tol ...resourceapi.DeviceToleration) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
			{Name: "mig", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class, Tolerations: tol}}}}},
	}
}

// waiting is a pod the scheduler found no place for, its claim made from a template.
func waiting(name, claimName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
			{Name: "mig", ResourceClaimTemplateName: ptr.To("t")}}},
		Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 cannot allocate all claims."}},
			ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "mig", ResourceClaimName: ptr.To(claimName)}},
		},
	}
}

func events(t *testing.T, c *fake.Clientset) []corev1.Event {
	t.Helper()
	l, err := c.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestTaintedCards(t *testing.T) {
	if got := tainted(smallNode(t, nil)); len(got) != 0 {
		t.Errorf("an untainted node: %v", got)
	}
	got := tainted(smallNode(t, cordon("ppu0")))
	if len(got) != 1 || got[0].name != "ppu0" || !got[0].classes["8g.96gb.accelfs.io"] || got[0].classes["1g.18gb.accelfs.io"] {
		t.Fatalf("ppu0 cordoned: %+v", got)
	}
	// Degraded is informational (None): nothing keeps a pod.
	if got := tainted(smallNode(t, func(n *accelfs.Node) {
		n.Card("gpu0").Admits = &accelfs.Admits{NewJobs: true, Condition: accelfs.CondDegraded}
	})); len(got) != 0 {
		t.Errorf("degraded: %v", got)
	}
	// A refused card publishes no device: no taint to name.
	if got := tainted(smallNode(t, cordon("ppu1"))); len(got) != 0 {
		t.Errorf("refused ppu1: %v", got)
	}
}

func TestMessage(t *testing.T) {
	cards := tainted(smallNode(t, cordon("ppu0")))
	exists := resourceapi.DeviceToleration{Key: "accelfs.io/cordoned", Operator: resourceapi.DeviceTolerationOpExists}
	for _, tc := range []struct {
		name  string
		wants []want
		keeps bool
	}{
		{"a profile ppu0 offers", claimWants(claim("c", "8g.96gb.accelfs.io")), true},
		{"any partition", claimWants(claim("c", "mig.accelfs.io")), true},
		{"a profile only gpu0 offers", claimWants(claim("c", "1g.18gb.accelfs.io")), false},
		{"another driver's class", claimWants(claim("c", "gpu.example.com")), false},
		{"tolerated", claimWants(claim("c", "8g.96gb.accelfs.io", exists)), false},
		{"another key tolerated", claimWants(claim("c", "8g.96gb.accelfs.io",
			resourceapi.DeviceToleration{Key: "accelfs.io/failed", Operator: resourceapi.DeviceTolerationOpExists})), true},
	} {
		msg, sig := message("node-a", cards, tc.wants)
		if (sig != "") != tc.keeps {
			t.Errorf("%s: kept %v, want %v (%q)", tc.name, sig != "", tc.keeps, msg)
		}
		if tc.keeps {
			for _, s := range []string{"node node-a", "ppu0 cordoned", "accelfs.io/cordoned:NoSchedule", "ppu0 is cordoned (echo 0", "c/mig"} {
				if !strings.Contains(msg, s) {
					t.Errorf("%s: %q lacks %q", tc.name, msg, s)
				}
			}
		}
	}
}

func TestEventOncePerPodAndTaints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fake.NewClientset(claim("p-mig", "8g.96gb.accelfs.io"), waiting("p", "p-mig"))
	e := Start(ctx, c, "node-a", Options{Resync: time.Hour})

	e.Update(smallNode(t, nil))
	if e.Watching() {
		t.Fatal("pods watched with no card tainted")
	}
	e.Update(smallNode(t, cordon("ppu0")))
	waitFor(t, "the Event", func() bool { return len(events(t, c)) == 1 })
	ev := events(t, c)[0]
	if ev.Type != corev1.EventTypeWarning || ev.Reason != Reason || ev.InvolvedObject.Name != "p" ||
		ev.InvolvedObject.UID != "uid-p" || ev.Source.Host != "node-a" || ev.Source.Component != Component {
		t.Errorf("event: %+v", ev)
	}
	if !strings.Contains(ev.Message, "accelfs.io/cordoned") || !strings.Contains(ev.Message, "ppu0") {
		t.Errorf("message: %q", ev.Message)
	}

	// The same taints again, and the pod changed: no second Event.
	e.Update(smallNode(t, cordon("ppu0")))
	p := waiting("p", "p-mig")
	p.Labels = map[string]string{"touched": "1"}
	if _, err := c.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(events(t, c)); n != 1 {
		t.Fatalf("%d Events for one pod and one taint set", n)
	}

	// Another taint set: one more.
	e.Update(smallNode(t, func(n *accelfs.Node) { cordon("ppu0")(n); fail("gpu0")(n) }))
	e.Update(smallNode(t, fail("ppu0")))
	waitFor(t, "the Event of the failed card", func() bool { return len(events(t, c)) == 2 })
	for _, ev := range events(t, c) {
		if strings.Contains(ev.Message, "failed") && !strings.Contains(ev.Message, "accelfs.io/failed=79:NoSchedule") {
			t.Errorf("the failed card's event: %q", ev.Message)
		}
	}

	// Nothing tainted: the watch is closed.
	e.Update(smallNode(t, nil))
	if e.Watching() {
		t.Error("pods still watched with no card tainted")
	}
}

func TestNoEventForAPodNotKept(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheduled := waiting("bound", "bound-mig")
	scheduled.Spec.NodeName = "node-b"
	fresh := waiting("fresh", "fresh-mig") // the scheduler has not tried it yet
	fresh.Status.Conditions = nil
	c := fake.NewClientset(
		claim("tol-mig", "8g.96gb.accelfs.io", resourceapi.DeviceToleration{Operator: resourceapi.DeviceTolerationOpExists}),
		waiting("tol", "tol-mig"),
		claim("gpu-mig", "1g.18gb.accelfs.io"), waiting("gpu", "gpu-mig"),
		claim("bound-mig", "8g.96gb.accelfs.io"), scheduled,
		claim("fresh-mig", "8g.96gb.accelfs.io"), fresh,
		claim("kept-mig", "8g.96gb.accelfs.io"), waiting("kept", "kept-mig"))
	e := Start(ctx, c, "node-a", Options{Resync: time.Hour})
	e.Update(smallNode(t, cordon("ppu0")))
	// The one pod kept is told; once it is, the others have been looked at (one worker, in order or not,
	// so wait a little more).
	waitFor(t, "the kept pod's Event", func() bool { return len(events(t, c)) >= 1 })
	time.Sleep(300 * time.Millisecond)
	for _, ev := range events(t, c) {
		if ev.InvolvedObject.Name != "kept" {
			t.Errorf("an Event on %s: %q", ev.InvolvedObject.Name, ev.Message)
		}
	}
}

func TestExtendedResourceLimit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := waiting("lim", "")
	p.Spec.ResourceClaims, p.Status.ResourceClaimStatuses = nil, nil
	p.Spec.Containers = []corev1.Container{{Name: "main", Image: "busybox", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{"accelfs.io/mig-4g.48gb": resource.MustParse("1"), "cpu": resource.MustParse("1")}}}}
	other := p.DeepCopy()
	other.Name, other.UID = "h200", "uid-h200"
	other.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"accelfs.io/mig-1g.18gb": resource.MustParse("1")}
	c := fake.NewClientset(p, other)
	e := Start(ctx, c, "node-a", Options{Resync: time.Hour})
	e.Update(smallNode(t, cordon("ppu0")))
	waitFor(t, "the limit's Event", func() bool { return len(events(t, c)) == 1 })
	time.Sleep(300 * time.Millisecond)
	evs := events(t, c)
	if len(evs) != 1 || evs[0].InvolvedObject.Name != "lim" || !strings.Contains(evs[0].Message, "the limit accelfs.io/mig-4g.48gb") {
		t.Errorf("events: %+v", evs)
	}
}

func TestRateLimited(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fake.NewClientset()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if _, err := c.ResourceV1().ResourceClaims("default").Create(ctx, claim(n+"-mig", "mig.accelfs.io"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CoreV1().Pods("default").Create(ctx, waiting(n, n+"-mig"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e := Start(ctx, c, "node-a", Options{QPS: 0.01, Burst: 2, Resync: time.Hour})
	e.Update(smallNode(t, cordon("ppu0")))
	waitFor(t, "the burst", func() bool { return e.Posted() == 2 })
	time.Sleep(300 * time.Millisecond)
	if n := len(events(t, c)); n != 2 {
		t.Errorf("%d Events past a burst of 2", n)
	}
	// What the plugin's metrics show: two posted, the other three put off.
	waitFor(t, "the put-off Events counted", func() bool { _, delayed, _ := e.Counts(); return delayed >= 3 })
	if posted, _, failed := e.Counts(); posted != 2 || failed != 0 {
		t.Errorf("counts: posted %d, failed %d", posted, failed)
	}
}
