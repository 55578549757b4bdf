package scheduler

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedq/schedq/kube/profile"
)

// memoRun fills 20 nodes of 8 CPUs with one bound 8-CPU pod each, fails
// five pending 1-CPU pods (made by mk), frees node n7 and places a sixth,
// taints n3 and fails a seventh, with the filter memo on or off. It
// returns the outcomes and the verdicts read from the memo.
func memoRun(t *testing.T, memo bool, mk func(name string) *v1.Pod) ([]Outcome, uint64, uint64) {
	f := newFWFixture(t, nil, nil)
	f.s.noFilterMemo = !memo
	for i := range 20 {
		f.h.AddNode(zonedNode(fmt.Sprint("n", i), "a"))
		full := pod(fmt.Sprint("full", i), 8000)
		full.Spec.NodeName = fmt.Sprint("n", i)
		f.h.AddPod(full)
	}
	var outs []Outcome
	try := func(name string) {
		f.h.AddPod(mk(name))
		out := f.once()
		out.state, out.fwStatus = clusterState{}, nil
		outs = append(outs, out)
	}
	for i := range 5 {
		try(fmt.Sprint("p", i))
	}
	f.h.DeletePod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "full7", UID: "uid-full7"}, Spec: v1.PodSpec{NodeName: "n7"}})
	try("q")
	old := zonedNode("n3", "a")
	tainted := old.DeepCopy()
	tainted.Spec.Taints = []v1.Taint{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}}
	f.h.UpdateNode(old, tainted)
	try("r")
	return outs, f.s.fmemoHits, f.s.fmemoRepeats
}

// TestFrameworkFilterMemoGivesTheFullFiltersOutcomes: pods of one
// signature on a full cluster read the verdicts of the nodes that did
// not change, and get the outcomes (nodes, messages, reasons) filtering
// every node gives; a freed node and a tainted one are filtered again.
func TestFrameworkFilterMemoGivesTheFullFiltersOutcomes(t *testing.T) {
	plain := func(name string) *v1.Pod { return pod(name, 1000) }
	without, hits, _ := memoRun(t, false, plain)
	if hits != 0 {
		t.Fatalf("%d verdicts read with the memo off", hits)
	}
	with, hits, repeats := memoRun(t, true, plain)
	if !reflect.DeepEqual(with, without) {
		t.Fatalf("with the memo:\n%+v\nwithout:\n%+v", with, without)
	}
	// p0 filters 20 nodes; p1..p4 repeat its failure whole (20 verdicts
	// read each); q reads 19 and filters n7 (freed); r reads 18 and
	// filters n3 (tainted) and n7 (q is on it).
	if want := uint64(4*20 + 19 + 18); hits != want || repeats != 4 {
		t.Fatalf("%d verdicts read from the memo, %d failures repeated; want %d, 4", hits, repeats, want)
	}
	if with[5].Result != Scheduled || with[5].Node != "n7" || with[6].Result != Scheduled {
		t.Fatalf("q and r: %+v, %+v", with[5], with[6])
	}
}

// TestFrameworkFilterMemoOffForCrossNodeFilters: a pod with required
// anti-affinity is filtered by InterPodAffinity, whose verdict on a node
// depends on the pods of others: the memo is not used.
func TestFrameworkFilterMemoOffForCrossNodeFilters(t *testing.T) {
	anti := func(name string) *v1.Pod {
		p := pod(name, 1000)
		p.Labels = map[string]string{"app": "x"}
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			TopologyKey:   "kubernetes.io/hostname",
		}}}}
		return p
	}
	without, _, _ := memoRun(t, false, anti)
	with, hits, _ := memoRun(t, true, anti)
	if hits != 0 {
		t.Fatalf("%d verdicts read from the memo for pods with anti-affinity", hits)
	}
	if !reflect.DeepEqual(with, without) {
		t.Fatalf("with the memo:\n%+v\nwithout:\n%+v", with, without)
	}
}

// TestFrameworkFilterMemoOffForExtendedResources: NodeResourcesFit may
// count an extended resource from DRA's objects, which no node's
// generation follows: a pod that requests one is filtered on every node.
// So is one that asks for a DeviceClass's devices by the class's implicit
// name, though its domain is kubernetes.io's: every class serves its own
// (a class created later lets NodeResourcesFit leave it to DRA).
func TestFrameworkFilterMemoOffForExtendedResources(t *testing.T) {
	for _, tc := range []struct{ name, resource string }{
		{"an extended resource", "example.com/gpu"},
		{"a class's implicit extended resource", "deviceclass.resource.kubernetes.io/gpu"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gpu := func(name string) *v1.Pod {
				p := pod(name, 1000)
				p.Spec.Containers[0].Resources.Requests[v1.ResourceName(tc.resource)] = resource.MustParse("1")
				return p
			}
			without, _, _ := memoRun(t, false, gpu)
			with, hits, _ := memoRun(t, true, gpu)
			if hits != 0 {
				t.Fatalf("%d verdicts read from the memo for pods with an extended resource", hits)
			}
			if !reflect.DeepEqual(with, without) {
				t.Fatalf("with the memo:\n%+v\nwithout:\n%+v", with, without)
			}
		})
	}
}

// TestFilterMemoForgetsDeletedNodes: the verdicts of nodes that are gone
// do not pile up: past twice the cluster's nodes, the memo starts over.
func TestFilterMemoForgetsDeletedNodes(t *testing.T) {
	m := &sigMemo{nodes: map[string]memoVerdict{}, fail: &memoFailure{}}
	for i := range 2*100 + 64 {
		m.nodes[fmt.Sprint("old", i)] = memoVerdict{gen: int64(i)}
	}
	m.bound(100)
	if len(m.nodes) != 264 || m.fail == nil {
		t.Fatalf("forgot at %d verdicts for 100 nodes", len(m.nodes))
	}
	m.nodes["one-more"] = memoVerdict{}
	m.bound(100)
	if len(m.nodes) != 0 || m.fail != nil {
		t.Fatalf("%d verdicts kept for a cluster of 100 nodes", len(m.nodes))
	}
}

// TestFrameworkFilterMemoOffWhileAPlacedPodRepels: a plain pod, which has
// a signature, is still filtered by InterPodAffinity while a placed pod's
// required anti-affinity selects it, and that verdict changes when the
// placed pod leaves another node. q1 fits only on n1, in the zone of the
// repelling pod on n0, and is refused; the repelling pod leaves (n0
// changes, n1 does not); q2, of q1's signature, must then land on n1. Had
// q1's cycle kept n1's verdict, q2 would read it and be refused.
func TestFrameworkFilterMemoOffWhileAPlacedPodRepels(t *testing.T) {
	f := newFWFixture(t, nil, nil)
	for i, zone := range []string{"a", "a", "b", "b"} {
		f.h.AddNode(zonedNode(fmt.Sprint("n", i), zone))
	}
	for n, milli := range map[string]int64{"n0": 7500, "n2": 8000, "n3": 8000} {
		full := pod("full-"+n, milli)
		full.Spec.NodeName = n
		f.h.AddPod(full)
	}
	repel := pod("repel", 500) // n0 has no room for q1 or q2 with or without it
	repel.Spec.NodeName = "n0"
	repel.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
		TopologyKey:   zoneLabel,
	}}}}
	f.h.AddPod(repel)
	mk := func(name string) *v1.Pod {
		p := pod(name, 1000)
		p.Labels = map[string]string{"app": "x"}
		return p
	}
	f.h.AddPod(mk("q1"))
	if out := f.once(); out.Result != Unschedulable {
		t.Fatalf("q1: %v on %q (%s), want unschedulable: n1 is in the repelling pod's zone", out.Result, out.Node, out.Message)
	}
	f.h.DeletePod(repel)
	f.h.AddPod(mk("q2"))
	out := f.once()
	if out.Result != Scheduled {
		t.Fatalf("q2: %v (%s), want scheduled once the repelling pod left", out.Result, out.Message)
	}
	if out.Node != "n1" {
		t.Fatalf("q2 on %q, want n1", out.Node)
	}
}

// TestFilterMemoFrontByPlace: the memo's front answers a node at a place
// only for the NodeInfo object and generation it holds there, and falls
// back to the verdict kept under the node's name for another object: a
// node that changed (a new generation of the same object) is not
// answered from its old verdict, nor a node that took another's place,
// even with the generation that one had. A place that holds the node
// itself with another verdict settles it as a miss, without the look-up
// by name (a verdict written for the node at another place since is not
// read: the node is filtered again).
func TestFilterMemoFrontByPlace(t *testing.T) {
	node := func(name string, gen int64) *framework.NodeInfo {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		ni.Generation = gen
		return ni
	}
	cases := []struct {
		name string
		// at and ni are looked up after n1 (generation 5) was kept at
		// place 0 and n2 (generation 6) at place 1.
		at     int
		ni     func(n1, n2 *framework.NodeInfo) *framework.NodeInfo
		wantOK bool
		wantSt string
		// newer: n1's verdict by name is for generation 9, its place's
		// for 5.
		newer bool
	}{
		{name: "the node at its place", at: 0, ni: func(n1, _ *framework.NodeInfo) *framework.NodeInfo { return n1 }, wantOK: true, wantSt: "n1"},
		{name: "the node changed at its place", at: 0, ni: func(n1, _ *framework.NodeInfo) *framework.NodeInfo {
			n1.Generation = 9
			return n1
		}},
		{name: "the node at another's place", at: 1, ni: func(n1, _ *framework.NodeInfo) *framework.NodeInfo { return n1 }, wantOK: true, wantSt: "n1"},
		{name: "the node changed at another's place", at: 1, ni: func(n1, _ *framework.NodeInfo) *framework.NodeInfo {
			n1.Generation = 9
			return n1
		}},
		{name: "the node changed at its place, its new verdict kept by name", at: 0, ni: func(n1, _ *framework.NodeInfo) *framework.NodeInfo {
			// A verdict written for n1 elsewhere (n1 filtered at another
			// place, a node having come or gone): the place settles,
			// the look-up by name is skipped, and the node is filtered.
			n1.Generation = 9
			return n1
		}, newer: true},
		{name: "another node object with the place's generation", at: 0, ni: func(_, _ *framework.NodeInfo) *framework.NodeInfo { return node("n3", 5) }},
		{name: "a new object of the node, of its generation", at: 0, ni: func(_, _ *framework.NodeInfo) *framework.NodeInfo { return node("n1", 5) }, wantOK: true, wantSt: "n1"},
		{name: "past the front", at: 7, ni: func(_, n2 *framework.NodeInfo) *framework.NodeInfo { return n2 }, wantOK: true, wantSt: "n2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &sigMemo{nodes: map[string]memoVerdict{}}
			n1, n2 := node("n1", 5), node("n2", 6)
			for i, ni := range []*framework.NodeInfo{n1, n2} {
				v := memoVerdict{gen: ni.Generation, st: fwk.NewStatus(fwk.Unschedulable, ni.Node().Name), code: fwk.Unschedulable}
				m.nodes[ni.Node().Name] = v
				m.place(i, ni, v)
			}
			if c.newer {
				m.nodes["n1"] = memoVerdict{gen: 9, st: fwk.NewStatus(fwk.Unschedulable, "n1 at 9"), code: fwk.Unschedulable}
			}
			ni := c.ni(n1, n2)
			v, ok := m.lookup(c.at, ni, ni.GetGeneration(), profile.DRAStamp{})
			if ok != c.wantOK || ok && v.st.Message() != c.wantSt {
				t.Fatalf("lookup at %d: %v %v, want %v %q", c.at, v.st, ok, c.wantOK, c.wantSt)
			}
			if ok && (c.at >= len(m.at) || m.at[c.at].ni != fwk.NodeInfo(ni)) {
				t.Fatalf("the verdict read is not placed at %d", c.at)
			}
		})
	}
}

// TestFitOutcomeReasonsRuns: fitOutcome's reasons skip a node's when
// they equal the node's before, and are the same set as with every
// node's inserted, whatever the statuses' reasons.
func TestFitOutcomeReasonsRuns(t *testing.T) {
	cases := []struct {
		name    string
		reasons [][]string // one status per node
	}{
		{name: "one reason everywhere", reasons: [][]string{{"Insufficient cpu"}, {"Insufficient cpu"}, {"Insufficient cpu"}}},
		{name: "two reasons alternating", reasons: [][]string{{"a"}, {"b"}, {"a"}, {"b"}}},
		{name: "a status of two reasons beside one of its first", reasons: [][]string{{"a", "b"}, {"a"}, {"a", "b"}, {"c"}}},
		{name: "many of one reason and one of two", reasons: append(slices.Repeat([][]string{{"a"}}, 20), []string{"a", "b"})},
		{name: "a status of no reason", reasons: [][]string{{}, {"a"}, {}, {"a"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			diag := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
			want := map[string]bool{}
			for i, rs := range c.reasons {
				diag.NodeToStatus.Set(fmt.Sprint("n", i), fwk.NewStatus(fwk.Unschedulable, rs...))
				for _, r := range rs {
					want[r] = true
				}
			}
			pod := pod("p", 1000)
			got := fitOutcome(pod, len(c.reasons), diag)
			fitOutcomeRuns = false
			all := fitOutcome(pod, len(c.reasons), diag)
			fitOutcomeRuns = true
			if !reflect.DeepEqual(got.Reasons, all.Reasons) || len(got.Reasons) != len(want) {
				t.Fatalf("reasons %q, every node's %q, want the set %v", got.Reasons, all.Reasons, want)
			}
			for _, r := range got.Reasons {
				if !want[r] {
					t.Fatalf("reason %q not of any node (%q)", r, got.Reasons)
				}
			}
		})
	}
}

// TestNoteRejectionsAsEveryAdd: noteRejections, which skips a status of
// the plugin and code of the status before, gives the nodes' statuses
// and the plugins' sets that adding every node's status gives, whatever
// the statuses: one shared, alike but distinct, alternating plugins,
// one plugin's Unschedulable and Pending, statuses of no plugin, and a
// diagnosis whose absent nodes' status was set.
func TestNoteRejectionsAsEveryAdd(t *testing.T) {
	st := func(code fwk.Code, plugin string) *fwk.Status {
		return fwk.NewStatus(code, "r").WithPlugin(plugin)
	}
	shared := st(fwk.Unschedulable, "A")
	cases := []struct {
		name   string
		sts    []*fwk.Status
		absent *fwk.Status
	}{
		{name: "one status shared", sts: []*fwk.Status{shared, shared, shared}},
		{name: "alike, distinct", sts: []*fwk.Status{st(fwk.Unschedulable, "A"), st(fwk.Unschedulable, "A")}},
		{name: "two plugins alternating", sts: []*fwk.Status{st(fwk.Unschedulable, "A"), st(fwk.Unschedulable, "B"), st(fwk.Unschedulable, "A")}},
		{name: "one plugin, rejected then pending", sts: []*fwk.Status{st(fwk.Unschedulable, "A"), st(fwk.Pending, "A"), st(fwk.UnschedulableAndUnresolvable, "A")}},
		{name: "pending first", sts: []*fwk.Status{st(fwk.Pending, "A"), st(fwk.Unschedulable, "A")}},
		{name: "no plugin between", sts: []*fwk.Status{st(fwk.Unschedulable, ""), st(fwk.Unschedulable, "A"), st(fwk.Unschedulable, "")}},
		{name: "absent nodes' status kept", sts: []*fwk.Status{shared}, absent: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "absent")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rejected := rejectedNodes(c.sts)
			newDiag := func() *framework.Diagnosis {
				d := &framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
				if c.absent != nil {
					d.NodeToStatus.SetAbsentNodesStatus(c.absent)
				}
				return d
			}
			got, want := newDiag(), newDiag()
			noteRejections(got, rejected, nil)
			for _, r := range rejected {
				want.NodeToStatus.Set(r.node.Node().Name, r.st)
				want.AddPluginStatus(r.st)
			}
			if !reflect.DeepEqual(got.UnschedulablePlugins, want.UnschedulablePlugins) || !reflect.DeepEqual(got.PendingPlugins, want.PendingPlugins) {
				t.Errorf("plugins %v, pending %v; want %v, %v", got.UnschedulablePlugins, got.PendingPlugins, want.UnschedulablePlugins, want.PendingPlugins)
			}
			if got.NodeToStatus.Len() != want.NodeToStatus.Len() || !reflect.DeepEqual(got.NodeToStatus.AbsentNodesStatus(), want.NodeToStatus.AbsentNodesStatus()) {
				t.Errorf("%d statuses, absent %v; want %d, %v", got.NodeToStatus.Len(), got.NodeToStatus.AbsentNodesStatus(), want.NodeToStatus.Len(), want.NodeToStatus.AbsentNodesStatus())
			}
			for _, r := range rejected {
				if g := got.NodeToStatus.Get(r.node.Node().Name); g != r.st {
					t.Errorf("%s: status %v, want %v", r.node.Node().Name, g, r.st)
				}
			}
		})
	}
}

// TestFitOutcomeOfRunsIsUpstreams: the outcome of a cycle that found no
// node, read from noteRejections' runs of reasons, is the one read from
// the diagnosis's map of statuses with upstream's FitError message,
// whatever the reasons: one everywhere, alternating, several per
// status, counts that sort otherwise as strings than as numbers, none,
// nodes without a status (the absent nodes' reasons counted for them),
// and a diagnosis that held a status before (no runs: the map is read).
func TestFitOutcomeOfRunsIsUpstreams(t *testing.T) {
	un := func(plugin string, reasons ...string) *fwk.Status {
		return fwk.NewStatus(fwk.Unschedulable, reasons...).WithPlugin(plugin)
	}
	cpu := un("NodeResourcesFit", "Insufficient cpu")
	cases := []struct {
		name   string
		sts    []*fwk.Status
		numAll int
		absent *fwk.Status
		before bool // a node's status set before the rejections
	}{
		{name: "one status everywhere", sts: slices.Repeat([]*fwk.Status{cpu}, 5), numAll: 5},
		{name: "alike statuses, distinct objects", sts: []*fwk.Status{un("A", "x"), un("A", "x"), un("B", "x")}, numAll: 3},
		{name: "two reasons alternating", sts: []*fwk.Status{un("A", "a"), un("B", "b"), un("A", "a"), un("B", "b")}, numAll: 4},
		{name: "several reasons a status", sts: []*fwk.Status{un("A", "a", "b"), un("A", "a"), un("C", "c", "a")}, numAll: 3},
		{name: "counts of two digits and one", sts: append(slices.Repeat([]*fwk.Status{un("A", "a")}, 12), slices.Repeat([]*fwk.Status{un("B", "b")}, 9)...), numAll: 21},
		{name: "a status without reasons", sts: []*fwk.Status{fwk.NewStatus(fwk.Unschedulable).WithPlugin("A"), un("A", "a")}, numAll: 2},
		{name: "pending beside rejected", sts: []*fwk.Status{fwk.NewStatus(fwk.Pending, "wait").WithPlugin("P"), cpu}, numAll: 2},
		{name: "nodes without a status", sts: []*fwk.Status{cpu, cpu}, numAll: 5,
			absent: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) [NodeAffinity]")},
		{name: "no node filtered", numAll: 3, absent: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "gone")},
		{name: "a status before", sts: []*fwk.Status{cpu, un("A", "a")}, numAll: 4, before: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rejected := rejectedNodes(c.sts)
			diag := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
			if c.absent != nil {
				diag.NodeToStatus.SetAbsentNodesStatus(c.absent)
			}
			if c.before {
				diag.NodeToStatus.Set("early", un("E", "early"))
			}
			runs := noteRejections(&diag, rejected, nil)
			if (runs == nil) != c.before {
				t.Fatalf("runs %v; want them only without a status before", runs)
			}
			p := pod("p", 1000)
			got := fitOutcomeOf(p, c.numAll, diag, runs)
			want := fitOutcome(p, c.numAll, diag)
			if upstream := (&framework.FitError{Pod: p, NumAllNodes: c.numAll, Diagnosis: diag}).Error(); want.Message != upstream {
				t.Fatalf("fitOutcome's message %q, upstream's %q", want.Message, upstream)
			}
			if got.Message != want.Message || !reflect.DeepEqual(got.Reasons, want.Reasons) ||
				!reflect.DeepEqual(got.Plugins, want.Plugins) || !reflect.DeepEqual(got.Pending, want.Pending) || got.fwStatus != want.fwStatus {
				t.Errorf("from runs: %q %q %v %v\nfrom the map: %q %q %v %v", got.Message, got.Reasons, got.Plugins, got.Pending,
					want.Message, want.Reasons, want.Plugins, want.Pending)
			}
		})
	}
}

// TestFilterMemoInternsRejections: a rejection equal to one the
// signature's memo kept (code, plugin, reasons) is that object; one of
// another code, plugin or reasons, or with an error (whose reasons
// begin with the error's message), is its own, and a status with an
// error is never given for another; at most internStatuses are kept.
func TestFilterMemoInternsRejections(t *testing.T) {
	un := func(plugin string, reasons ...string) *fwk.Status {
		return fwk.NewStatus(fwk.Unschedulable, reasons...).WithPlugin(plugin)
	}
	errSt := func() *fwk.Status {
		return fwk.NewStatus(fwk.Unschedulable, "r").WithError(errors.New("boom")).WithPlugin("A")
	}
	cases := []struct {
		name  string
		first *fwk.Status
		next  *fwk.Status
		same  bool
	}{
		{name: "equal", first: un("A", "r"), next: un("A", "r"), same: true},
		{name: "equal, no reasons", first: un("A"), next: un("A"), same: true},
		{name: "another plugin", first: un("A", "r"), next: un("B", "r")},
		{name: "another code", first: un("A", "r"), next: fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "r").WithPlugin("A")},
		{name: "other reasons", first: un("A", "r"), next: un("A", "r", "s")},
		{name: "the next with an error", first: un("A", "boom", "r"), next: errSt()},
		{name: "the first with an error", first: errSt(), next: un("A", "boom", "r")},
		{name: "both with an error", first: errSt(), next: errSt()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &sigMemo{}
			if got := m.intern(c.first); got != c.first {
				t.Fatalf("the first status: %v, want itself", got)
			}
			if got := m.intern(c.next); (got == c.first) != c.same || !c.same && got != c.next {
				t.Errorf("interned the first (%v): %v, want %v", c.first, got == c.first, c.same)
			}
		})
	}
	t.Run("bounded", func(t *testing.T) {
		m := &sigMemo{}
		for i := range 2 * internStatuses {
			m.intern(un("A", fmt.Sprint(i)))
		}
		if len(m.statuses) != internStatuses {
			t.Errorf("%d statuses kept, want %d", len(m.statuses), internStatuses)
		}
	})
}

// rejectedNodes gives each status a node of its own, n0, n1 and so on, as
// a cycle's rejections.
func rejectedNodes(sts []*fwk.Status) []nodeStatus {
	var rejected []nodeStatus
	for i, st := range sts {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i)}})
		rejected = append(rejected, nodeStatus{node: ni, st: st})
	}
	return rejected
}
