package profile

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestClaimLocksSerialise: a PreBind that locks a claim another holds
// waits until that one unlocks it, whatever other claims either holds;
// once both are done no lock is kept. The test waits for lock's own word
// that the second PreBind found b held (waiting), not on the clock.
func TestClaimLocksSerialise(t *testing.T) {
	waiting := make(chan types.UID, 4)
	l := &claimLocks{waiting: func(uid types.UID) { waiting <- uid }}
	first := l.lock([]claimRef{{name: "a", uid: "uid-a"}, {name: "b", uid: "uid-b"}})
	got, done := make(chan struct{}), make(chan struct{})
	go func() {
		unlock := l.lock([]claimRef{{name: "b", uid: "uid-b"}, {name: "c", uid: "uid-c"}})
		close(got)
		unlock()
		close(done)
	}()
	select {
	case uid := <-waiting:
		if uid != "uid-b" {
			t.Fatalf("the second PreBind waits for %s, want uid-b", uid)
		}
	case <-got:
		t.Fatal("b locked twice at once")
	}
	if n := users(l, "uid-b"); n != 2 {
		t.Fatalf("b's lock has %d users while one holds it and one waits, want 2", n)
	}
	first()
	<-got
	<-done
	if n := len(l.held); n != 0 {
		t.Fatalf("%d locks kept after every PreBind ended", n)
	}
}

// users is the number of PreBinds holding or waiting for uid's lock.
func users(l *claimLocks, uid string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.held[types.UID(uid)]; c != nil {
		return c.users
	}
	return 0
}

// modelsCluster is node "a" with a V100 (gpu-0) and a T4 (gpu-1), and
// claims "shared" of 1000 of a V100 and "own" of 1000 of a T4.
func modelsCluster() Cluster {
	var c Cluster
	c.Objects = append(c.Objects, &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: memoDriver}})
	nd, sl := gpuNode("a", "V100", 2)
	t4 := "T4"
	sl.Spec.Devices[1].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{"model": {StringValue: &t4}}
	c.Nodes = append(c.Nodes, nd)
	c.Objects = append(c.Objects, sl, shareClaim("shared", 1000, "V100", "", ""), shareClaim("own", 1000, "T4", "", ""))
	return c
}

// withClaims makes p use the claims named, as pod claims of the same
// names, in that order.
func withClaims(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: n, ResourceClaimName: &n})
		}
	}
}

// TestDRAGroupMemberOwnClaimGetsItsDevice: in a pod group cycle, member
// m0 reserves claim "shared" (the V100); member m1 asks for "shared"
// first, then "own" (a T4). m1 reuses the allocation of "shared" in
// flight and allocates "own": after its Reserve, "own" is in flight on
// the T4 and "shared" still on the V100. (Upstream's Filter lists the
// new allocations before the reused ones while its Reserve pairs them
// with the claims in the pod's order: fed the pod as it is, m1's Reserve
// puts "own" in flight on the V100.)
func TestDRAGroupMemberOwnClaimGetsItsDevice(t *testing.T) {
	ctx := context.Background()
	m, f := memoPlugin(t, modelsCluster())
	ni, err := f.Snapshot().NodeInfos().Get("a")
	if err != nil {
		t.Fatal(err)
	}
	group := framework.NewCycleState()
	for _, p := range []*v1.Pod{pod("m0", "", withClaims("shared")), pod("m1", "", withClaims("shared", "own"))} {
		cs := framework.NewCycleState()
		cs.SetPodGroupSchedulingCycle(group)
		if _, st := m.PreFilter(ctx, cs, p, nil); !st.IsSuccess() {
			t.Fatalf("%s: PreFilter: %v", p.Name, st)
		}
		if st := m.Filter(ctx, cs, p, ni); !st.IsSuccess() {
			t.Fatalf("%s: Filter: %v", p.Name, st)
		}
		if st := m.Reserve(ctx, cs, p, "a"); !st.IsSuccess() {
			t.Fatalf("%s: Reserve: %v", p.Name, st)
		}
	}
	tracker := f.fwk.SharedDRAManager().ResourceClaims()
	for claim, want := range map[string]string{"shared": "gpu-0", "own": "gpu-1"} {
		a := tracker.GetPendingAllocation(types.UID("claim-" + claim))
		if a == nil || len(a.Devices.Results) != 1 || a.Devices.Results[0].Device != want {
			t.Errorf("claim %s in flight as %v, want on %s", claim, a, want)
		}
	}
}
