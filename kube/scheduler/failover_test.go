package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/plugins"
)

// base is when the test clusters were made (API server clock).
var base = time.Unix(1_800_000_000, 0)

func at(sec int) metav1.Time { return metav1.NewTime(base.Add(time.Duration(sec) * time.Second)) }

// cpuNode is a node with cpu cores, created at second created.
func cpuNode(name, cpu string, created int) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), CreationTimestamp: at(created)},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("16Gi"), v1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

func ptr[T any](v T) *T { return &v }

func cpuPod(name, cpu string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: at(0)},
		Spec: v1.PodSpec{SchedulerName: "schedq", Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

// boundPod is a pod the API server bound to node at second bound.
func boundPod(name, cpu, node string, bound int) *v1.Pod {
	p := cpuPod(name, cpu)
	p.Spec.NodeName = node
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: at(bound)}}
	return p
}

// recordingReporter writes onto its pods what APIReporter's patch writes.
type recordingReporter struct{ pods map[string]*v1.Pod }

func (r *recordingReporter) Scheduled(context.Context, *v1.Pod, string)           {}
func (r *recordingReporter) Warn(context.Context, runtime.Object, string, string) {}
func (r *recordingReporter) Unschedulable(_ context.Context, pod *v1.Pod, _, msg string, record func() FailureRecord) {
	if record == nil {
		return
	}
	p := pod.DeepCopy()
	raw, _ := json.Marshal(record())
	p.Annotations = map[string]string{FailureAnnotation: string(raw)}
	p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: msg}}
	r.pods[p.Name] = p
}

// cluster is what a new leader lists: nodes, assigned pods, and pending
// pods as the previous leader left them.
type cluster struct {
	nodes    []*v1.Node
	assigned []*v1.Pod
	pending  []*v1.Pod
}

// fullCluster is 10 nodes of 4 cpu, each with 3900m taken, and n pending
// pods of 2 cpu plus one of 250m ("small"), all tried once by a previous
// leader, which left its records on them.
func fullCluster(t testing.TB, n int) cluster {
	t.Helper()
	var c cluster
	for i := range 10 {
		name := fmt.Sprint("n", i)
		c.nodes = append(c.nodes, cpuNode(name, "4", 0))
		c.assigned = append(c.assigned, boundPod("filler-"+name, "3900m", name, 10))
	}
	pending := []*v1.Pod{cpuPod("small", "250m")}
	for i := range n {
		pending = append(pending, cpuPod(fmt.Sprint("big-", i), "2"))
	}
	// The previous leader.
	q, err := schedq.New(testQueueConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cache := NewCache()
	h := &Handlers{Queue: q, Cache: cache, SchedulerName: "schedq"}
	rep := &recordingReporter{pods: map[string]*v1.Pod{}}
	s := mustNew(t, q, cache, &syncBinder{}, rep, Options{Rand: rand.New(rand.NewPCG(1, 1))})
	for _, nd := range c.nodes {
		h.AddNode(nd)
	}
	for _, p := range c.assigned {
		h.AddPod(p)
	}
	for _, p := range pending {
		h.AddPod(p)
	}
	for {
		info, ok := tryPop(q)
		if !ok {
			break
		}
		if out := s.ScheduleOne(context.Background(), info); out.Result != Unschedulable {
			t.Fatalf("previous leader: %s %+v", info.Item.Name, out)
		}
	}
	for _, p := range pending {
		rp := rep.pods[p.Name]
		if rp == nil {
			t.Fatalf("no record for %s", p.Name)
		}
		c.pending = append(c.pending, rp)
	}
	return c
}

// newLeader is a new leader's queue, cache and handlers, with the warm
// start on, before its informers deliver anything.
func newLeader(t testing.TB, cold bool, clock schedq.Clock) (*schedq.Queue[types.NamespacedName, *v1.Pod], *Handlers) {
	t.Helper()
	cfg := testQueueConfig(t)
	cfg.Clock = clock
	q, err := schedq.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &Handlers{Queue: q, Cache: NewCache(), SchedulerName: "schedq", AffinityMatch: plugins.MatchesRequiredAffinity,
		Logger: slog.New(slog.DiscardHandler), Hints: cfg.Hints}
	if !cold {
		h.warm = &warmStart{}
	}
	return q, h
}

// list delivers c as informers' initial lists, pods first or nodes first,
// then ends them.
func (c cluster) list(h *Handlers, podsFirst bool) {
	nodes := func() {
		for _, n := range c.nodes {
			h.addNode(n, true)
		}
	}
	pods := func() {
		for _, p := range c.assigned {
			h.addPod(p, true)
		}
		for _, p := range c.pending {
			h.addPod(p, true)
		}
	}
	if podsFirst {
		pods()
		nodes()
	} else {
		nodes()
		pods()
	}
	if h.warm != nil {
		h.warm.finish(h)
	}
}

func where(q *schedq.Queue[types.NamespacedName, *v1.Pod], name string) schedq.Location {
	_, loc, _ := q.Get(types.NamespacedName{Namespace: "default", Name: name})
	return loc
}

// 1,000 pods that NodeResourcesFit rejected are parked at start, in either
// order of the initial lists; cold, they all go to activeQ.
func TestWarmStartParksRecordedPods(t *testing.T) {
	c := fullCluster(t, 1000)
	for _, podsFirst := range []bool{false, true} {
		q, h := newLeader(t, false, nil)
		c.list(h, podsFirst)
		if got := q.Counts(); got.Active != 0 || got.Backoff != 0 || got.Unschedulable != 1001 {
			t.Fatalf("podsFirst=%v: %+v, want all 1001 parked", podsFirst, got)
		}
		if plugins := q.Stats().HeldBy; plugins["NodeResourcesFit"] != 1001 {
			t.Fatalf("parked behind %v", plugins)
		}
	}
	q, h := newLeader(t, true, nil)
	c.list(h, false)
	if got := q.Counts(); got.Active != 1001 {
		t.Fatalf("cold start: %+v", got)
	}
	// Records naming a plugin no event wakes (another version's, say)
	// park nothing.
	q, h = newLeader(t, false, nil)
	h.Hints = testQueueConfig(t).Hints
	delete(h.Hints, "NodeResourcesFit")
	c.list(h, false)
	if got := q.Counts(); got.Active != 1001 {
		t.Fatalf("records of a plugin without events: %+v", got)
	}
}

// Changes made during the failover wake the pods they may help, through
// the plugins' hints, whichever order the lists come in.
func TestWarmStartReplaysChanges(t *testing.T) {
	c := fullCluster(t, 1000)
	tests := []struct {
		name   string
		change func(*cluster)
		woken  func(name string) bool // which pods must leave the parking area
	}{
		{"nothing changed", func(*cluster) {}, func(string) bool { return false }},
		{"a node with room for the small pod only", func(c *cluster) {
			c.nodes = append(c.nodes, cpuNode("fresh", "1", 100))
		}, func(name string) bool { return name == "small" }},
		// A grown node wakes every pod that would fit it empty, as the
		// update event would have.
		{"a node grew since", func(c *cluster) {
			grown := cpuNode("n3", "4100m", 0)
			grown.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Time: ptr(at(100))}}
			c.nodes[3] = grown
		}, func(string) bool { return true }},
		{"a node grew in the second of the record's last change", func(c *cluster) {
			c.nodes[3] = cpuNode("n3", "4100m", 0) // only the window hash tells
		}, func(string) bool { return true }},
		{"a node deleted", func(c *cluster) {
			c.nodes = c.nodes[1:] // a deletion helps none of these plugins, but cannot be told apart
		}, func(string) bool { return true }},
		{"an assigned pod deleted", func(c *cluster) {
			c.assigned = c.assigned[1:]
		}, func(string) bool { return true }},
		{"a pod bound elsewhere since", func(c *cluster) {
			c.nodes = append(c.nodes, cpuNode("other", "1", 50))
			c.assigned = append(c.assigned, boundPod("late", "1", "other", 60))
		}, func(name string) bool { return name == "small" }}, // through the node, not the pod
		{"the small pod's spec changed", func(c *cluster) {
			p := c.pending[0].DeepCopy()
			p.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
			c.pending[0] = p
		}, func(name string) bool { return name == "small" }},
	}
	for _, tc := range tests {
		for _, podsFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/podsFirst=%v", tc.name, podsFirst), func(t *testing.T) {
				cc := cluster{nodes: append([]*v1.Node(nil), c.nodes...), assigned: append([]*v1.Pod(nil), c.assigned...),
					pending: append([]*v1.Pod(nil), c.pending...)}
				tc.change(&cc)
				q, h := newLeader(t, false, nil)
				cc.list(h, podsFirst)
				woken := 0
				for _, p := range cc.pending {
					loc := where(q, p.Name)
					if want := tc.woken(p.Name); want != (loc != schedq.InUnschedulable) {
						t.Fatalf("%s is %v, want woken=%v", p.Name, loc, want)
					}
					if loc != schedq.InUnschedulable {
						woken++
					}
				}
				t.Logf("%d of %d pods woken", woken, len(cc.pending))
			})
		}
	}
}

// A standby's queue, filled long before the leader failed the pods,
// follows the leader's records: a pod it never tried is parked when the
// leader's record arrives, and not re-parked once this queue has tried it.
func TestStandbyFollowsRecords(t *testing.T) {
	c := fullCluster(t, 3)
	q, h := newLeader(t, false, nil)
	unrecorded := cluster{nodes: c.nodes, assigned: c.assigned}
	for _, p := range c.pending {
		bare := p.DeepCopy()
		bare.Annotations, bare.Status.Conditions = nil, nil
		unrecorded.pending = append(unrecorded.pending, bare)
	}
	unrecorded.list(h, false)
	if got := q.Counts(); got.Active != 4 {
		t.Fatalf("before the records: %+v", got)
	}
	for i, p := range c.pending {
		h.UpdatePod(unrecorded.pending[i], p)
	}
	if got := q.Counts(); got.Unschedulable != 4 || got.Active != 0 {
		t.Fatalf("after the records: %+v", got)
	}
}

// firstMinute runs a new leader over c for a minute of virtual time and
// returns its attempts and when the small pod was bound (-1: not bound).
// The new node with room for the small pod appeared during the failover.
// The queue runs on the fake clock of a synctest bubble, its Run loop
// flushing on schedule while the test steps the time.
func firstMinute(t *testing.T, c cluster, cold bool) (attempts int, smallBound time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		q, h := newLeader(t, cold, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go q.Run(ctx)
		c.list(h, true)
		binder := &syncBinder{}
		s := mustNew(t, q, h.Cache, binder, &recReporter{}, Options{Rand: rand.New(rand.NewPCG(1, 1))})
		smallBound = -1
		const step = 10 * time.Millisecond
		for time.Since(start) < time.Minute {
			for {
				info, ok := tryPop(q)
				if !ok {
					break
				}
				attempts++
				s.ScheduleOne(context.Background(), info)
				if info.Item.Name == "small" && binder.binds["small"] != "" && smallBound < 0 {
					smallBound = time.Since(start)
				}
			}
			time.Sleep(step)
			synctest.Wait() // Run has flushed what was due
		}
	})
	return attempts, smallBound
}

// The failover of the issue, in virtual time: 20,000 pods a previous
// leader found unschedulable, and a node added during the failover with
// room for one small pod. The new leader must make far fewer than 1,000
// attempts in its first minute, and still bind the small pod within 5 s.
func TestFailoverFirstMinute(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 2000
	}
	c := fullCluster(t, n)
	c.nodes = append(c.nodes, cpuNode("fresh", "1", 100))
	warm, warmBound := firstMinute(t, c, false)
	cold, coldBound := firstMinute(t, c, true)
	t.Logf("first minute with %d unschedulable pods: warm %d attempts (small pod bound at %v), cold %d attempts (at %v)",
		n+1, warm, warmBound, cold, coldBound)
	if warm >= 1000 {
		t.Errorf("warm start: %d attempts in the first minute, want < 1000", warm)
	}
	if warmBound < 0 || warmBound > 5*time.Second {
		t.Errorf("warm start: the small pod was bound at %v, want within 5s", warmBound)
	}
	if cold < n {
		t.Errorf("cold start made only %d attempts: the comparison is void", cold)
	}
}

// Through real informers on the fake clientset: Register's synced turns
// true only once the parked pods are reconciled, and the pod the new node
// has room for is awake then.
func TestWarmStartThroughInformers(t *testing.T) {
	c := fullCluster(t, 1000)
	c.nodes = append(c.nodes, cpuNode("fresh", "1", 100))
	var objs []runtime.Object
	for _, n := range c.nodes {
		objs = append(objs, n)
	}
	for _, p := range append(c.assigned, c.pending...) {
		objs = append(objs, p)
	}
	q, h := newLeader(t, false, nil)
	h.warm = nil // Register turns it on
	factory := informers.NewSharedInformerFactory(fake.NewClientset(objs...), 0)
	synced, err := h.Register(factory.Core().V1().Pods().Informer(), factory.Core().V1().Nodes().Informer(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel()
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		t.Fatal("never synced")
	}
	if got := q.Counts(); got.Unschedulable != 1000 || queued(got) != 1001 {
		t.Fatalf("synced with %+v, want 1000 parked", got)
	}
	if loc := where(q, "small"); loc == schedq.InUnschedulable {
		t.Fatal("the pod the new node has room for is still parked")
	}
}

// The status patch carries the record, which a new leader can read back;
// an unchanged condition with the same plugins is not patched again.
func TestReporterWritesTheRecord(t *testing.T) {
	p := cpuPod("p", "1")
	client := fake.NewClientset(p)
	r := APIReporter{Client: client, Recorder: events.NewFakeRecorder(10)}
	rec := newFailureRecord(p, []string{"NodeResourcesFit"}, clusterState{nodes: 1, nodesWin: 2, pods: 3, nodesAt: 4, podsAt: 5})
	r.Unschedulable(context.Background(), p, v1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.", func() FailureRecord { return rec })
	got, err := client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	back, ok := parkable(got)
	if !ok {
		t.Fatalf("no usable record after the patch: %v %+v", got.Annotations, got.Status.Conditions)
	}
	if back.nodes != 1 || back.nodesWin != 2 || back.pods != 3 || back.nodesAt != 4 || back.podsAt != 5 || back.plugins[0] != "NodeResourcesFit" {
		t.Fatalf("record read back as %+v", back)
	}
	patches := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	r.Unschedulable(context.Background(), got, v1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.", func() FailureRecord { return rec })
	if patches() != 1 {
		t.Fatal("patched an unchanged condition again")
	}
	rec.Plugins = []string{"NodeAffinity"}
	r.Unschedulable(context.Background(), got, v1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.", func() FailureRecord { return rec })
	if patches() != 2 {
		t.Fatal("new rejecting plugins were not recorded")
	}
	// A later error replaces the condition: the record no longer applies.
	r.Unschedulable(context.Background(), got, "SchedulerError", "binding rejected", nil)
	got, _ = client.CoreV1().Pods("default").Get(context.Background(), "p", metav1.GetOptions{})
	if _, ok := parkable(got); ok {
		t.Fatal("a pod whose last failure is an error is parkable")
	}
}

// A node's heartbeat changes no fingerprint; its allocatable does. The
// time index answers ranges as the sets they stand for.
func TestFingerprints(t *testing.T) {
	n := cpuNode("n", "4", 0)
	beat := n.DeepCopy()
	beat.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: at(50)}}
	beat2 := beat.DeepCopy()
	beat2.Status.Conditions[0].LastHeartbeatTime = at(60)
	if nodeHash(beat) != nodeHash(beat2) {
		t.Error("a heartbeat changed the node's hash")
	}
	if nodeHash(n) == nodeHash(cpuNode("n", "5", 0)) {
		t.Error("allocatable does not change the node's hash")
	}
	x := newTimeIndex[string]()
	x.set("a", 1, 10, nil)
	x.set("b", 2, 20, nil)
	x.set("c", 4, 20, nil)
	x.set("d", 8, 30, nil)
	if got := x.upTo(20); got != 1^2^4 {
		t.Errorf("upTo(20) = %d", got)
	}
	if got := x.xorRange(15, 30); got != 2^4^8 {
		t.Errorf("xorRange(15, 30) = %d", got)
	}
	x.remove("c")
	x.set("b", 16, 40, nil) // moved in time
	if got, want := x.upTo(30), uint64(1^8); got != want {
		t.Errorf("after remove and move: upTo(30) = %d, want %d", got, want)
	}
	if got := x.since(30); len(got) != 2 || x.latestNow() != 40 || x.latest != 40 {
		t.Errorf("since(30) = %v, latestNow %d", got, x.latestNow())
	}
	x.remove("b")
	if x.latestNow() != 30 || x.latest != 40 {
		t.Errorf("latestNow %d latest %d after removing the latest", x.latestNow(), x.latest)
	}
}

// TestWarmStartSettledInDoubtIsNotParked: a pod whose binding was in
// doubt and turns out not made goes to activeQ, whatever record it
// carries: its term found it a place after that record was written (room
// the record's fingerprints do not show: a forgotten assumption, a
// nomination let go), so the record is no verdict on it any more. A pod
// added by the informer with the same record is still parked.
func TestWarmStartSettledInDoubtIsNotParked(t *testing.T) {
	c := fullCluster(t, 0)
	small := c.pending[0]
	for _, tc := range []struct {
		name    string
		inDoubt bool
		want    schedq.Location
	}{
		{name: "settled unbound", inDoubt: true, want: schedq.InActive},
		{name: "added by the informer", inDoubt: false, want: schedq.InUnschedulable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, h := newLeader(t, false, nil)
			cluster{nodes: c.nodes, assigned: c.assigned}.list(h, false)
			if !tc.inDoubt {
				h.AddPod(small)
			} else {
				inDoubtOn(t, h.Cache, small, "n0")
				d := h.Cache.InDoubt()
				if len(d) != 1 {
					t.Fatalf("in doubt: %v", d)
				}
				h.SettleInDoubt(d[0], small)
			}
			if got := where(q, "small"); got != tc.want {
				t.Errorf("small is %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWarmStartNominationLetGo: a pod rejected while a pod of higher
// priority held its room as a nomination is parked only if the new
// leader holds the same nominations; a nomination let go before the
// failover (its pod deleted while pending) freed room that neither the
// nodes' nor the assigned pods' fingerprint shows, and wakes the pod, as
// the nomination's end would have.
func TestWarmStartNominationLetGo(t *testing.T) {
	n1 := cpuNode("n1", "4", 0)
	hi := int32(100)
	b := cpuPod("b", "4")
	b.Spec.Priority = &hi
	// The previous leader: b nominated to n1 (and parked), a rejected.
	q, err := schedq.New(testQueueConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cache := NewCache()
	h := &Handlers{Queue: q, Cache: cache, SchedulerName: "schedq"}
	rep := &recordingReporter{pods: map[string]*v1.Pod{}}
	s := mustNew(t, q, cache, &syncBinder{}, rep, Options{Rand: rand.New(rand.NewPCG(1, 1))})
	h.AddNode(n1)
	if err := q.Park(b, schedq.Failure{RejectedBy: []string{"NodeAffinity"}}); err != nil {
		t.Fatal(err)
	}
	if err := q.Nominate(types.NamespacedName{Namespace: "default", Name: "b"}, "n1"); err != nil {
		t.Fatal(err)
	}
	h.AddPod(cpuPod("a", "2"))
	info, ok := tryPop(q)
	if !ok || info.Item.Name != "a" {
		t.Fatalf("popped %+v, want a", info.Item)
	}
	if out := s.ScheduleOne(context.Background(), info); out.Result != Unschedulable {
		t.Fatalf("a: %+v, want unschedulable beside b's nomination", out)
	}
	a := rep.pods["a"]
	nominated := b.DeepCopy()
	nominated.Status.NominatedNodeName = "n1"
	for _, tc := range []struct {
		name    string
		pending []*v1.Pod
		parked  bool
	}{
		{name: "b still nominated", pending: []*v1.Pod{a, nominated}, parked: true},
		{name: "b deleted before the failover", pending: []*v1.Pod{a}, parked: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nq, nh := newLeader(t, false, nil)
			cluster{nodes: []*v1.Node{n1}, pending: tc.pending}.list(nh, false)
			if got := where(nq, "a"); (got == schedq.InUnschedulable) != tc.parked {
				t.Errorf("a is %v, want parked=%v", got, tc.parked)
			}
		})
	}
}
