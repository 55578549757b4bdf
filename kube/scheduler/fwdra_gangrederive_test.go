package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedq/schedq/kube/profile"
)

// gpusSlice is node's pool of n GPUs, gpu-0 to gpu-(n-1).
func gpusSlice(node string, n int) *resourceapi.ResourceSlice {
	sl := gpuSlice(node)
	sl.Spec.Devices = nil
	for i := range n {
		sl.Spec.Devices = append(sl.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return sl
}

// namedGPUClaim is an unallocated claim of one GPU named name (UID
// "claim-"+name).
func namedGPUClaim(name string) *resourceapi.ResourceClaim {
	c := gpuClaim("")
	c.Name, c.UID = name, types.UID("claim-"+name)
	return c
}

// usesClaims makes p use the claims named, as pod claims of the same
// names.
func usesClaims(p *v1.Pod, names ...string) {
	for _, n := range names {
		p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, v1.PodResourceClaim{Name: n, ResourceClaimName: &n})
		p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: n})
	}
}

// stallingDRA is a DRA manager whose claim tracker, the first time an
// in-flight allocation of one of claims is dropped because its last
// sharer gave it back (not because PreBind wrote it), closes freed and
// holds that goroutine until resume is closed: what the scheduling loop
// does meanwhile sees the allocation's devices free.
type stallingDRA struct {
	fwk.SharedDRAManager
	claims        map[types.UID]bool
	once          sync.Once
	freed, resume chan struct{}
}

func newStallingDRA(claims ...string) *stallingDRA {
	s := &stallingDRA{claims: map[types.UID]bool{}, freed: make(chan struct{}), resume: make(chan struct{})}
	for _, c := range claims {
		s.claims[types.UID("claim-"+c)] = true
	}
	return s
}

// wrap is a profile.Setup's WrapDRA.
func (s *stallingDRA) wrap(m fwk.SharedDRAManager) profile.DRAWrap {
	s.SharedDRAManager = m
	return profile.DRAWrap{Manager: s}
}

func (s *stallingDRA) ResourceClaims() fwk.ResourceClaimTracker {
	return stallingClaims{ResourceClaimTracker: s.SharedDRAManager.ResourceClaims(), s: s}
}

type stallingClaims struct {
	fwk.ResourceClaimTracker
	s *stallingDRA
}

func (c stallingClaims) MaybeRemoveClaimPendingAllocation(uid types.UID, force bool) bool {
	deleted := c.ResourceClaimTracker.MaybeRemoveClaimPendingAllocation(uid, force)
	if deleted && !force && c.s.claims[uid] {
		c.s.once.Do(func() {
			close(c.s.freed)
			<-c.s.resume
		})
	}
	return deleted
}

// TestFrameworkGangRederiveKeepsOwnDevices: two members share claim
// "shared" and have a claim of their own each ("own-0", "own-1"); n1 has
// three GPUs, all of which the gang's trial reserves. The member whose
// PreBind comes second finds "shared" allocated and derives its state
// again; a lone pod "x" asking for a GPU, scheduled meanwhile, must not
// get that member's GPU: the gang binds, x does not, and no GPU is
// allocated to two claims.
func TestFrameworkGangRederiveKeepsOwnDevices(t *testing.T) {
	stall := newStallingDRA("own-0", "own-1")
	claims := []*resourceapi.ResourceClaim{namedGPUClaim("shared"), namedGPUClaim("own-0"), namedGPUClaim("own-1"), namedGPUClaim("x")}
	g := newDRAGangOn(t, gpusSlice("n1", 3), claims, false, stall.wrap)
	g.f.addFWGang("g", 2, 2, func(i int, p *v1.Pod) { usesClaims(p, "shared", fmt.Sprintf("own-%d", i)) })
	if out := g.f.once(); out.Result != Scheduled {
		t.Fatalf("gang: outcome %+v, want Scheduled", out)
	}
	settled := make(chan struct{})
	go func() { g.f.s.Wait(); close(settled) }()
	x := pod("x", 100)
	usesClaims(x, "x")
	g.f.h.AddPod(x)
	select {
	case <-stall.freed: // a member's PreBind gave its own GPU back and waits
		g.f.once()
		close(stall.resume)
	case <-settled:
		g.f.once()
	}
	g.f.s.Wait()
	if bound := g.bound(); !slices.Equal(bound, []string{"g-0", "g-1"}) {
		t.Errorf("bound %v, want the gang's g-0 and g-1 only; reported %q", bound, g.r.failures)
	}
	g.noDeviceTwice(claims)
}

// TestFrameworkGangRederiveRacesLoneCycles: a gang of four shares claim
// "shared", each member with a claim of its own, on n1's eight GPUs,
// while the scheduling loop runs five lone pods' cycles, each asking for
// a GPU of its own, as the members' PreBinds (on goroutines of their
// own) find "shared" allocated and derive their states again. Every
// member binds, at most three lone pods do, no GPU is allocated to two
// claims and nothing is left in flight. Run it under -race.
func TestFrameworkGangRederiveRacesLoneCycles(t *testing.T) {
	claims := []*resourceapi.ResourceClaim{namedGPUClaim("shared")}
	for i := range 4 {
		claims = append(claims, namedGPUClaim(fmt.Sprintf("own-%d", i)))
	}
	for i := range 5 {
		claims = append(claims, namedGPUClaim(fmt.Sprintf("x-%d", i)))
	}
	g := newDRAGangOn(t, gpusSlice("n1", 8), claims, false, nil)
	g.f.addFWGang("g", 4, 4, func(i int, p *v1.Pod) { usesClaims(p, "shared", fmt.Sprintf("own-%d", i)) })
	if out := g.f.once(); out.Result != Scheduled {
		t.Fatalf("gang: outcome %+v, want Scheduled", out)
	}
	for i := range 5 {
		x := pod(fmt.Sprintf("x-%d", i), 100)
		usesClaims(x, fmt.Sprintf("x-%d", i))
		g.f.h.AddPod(x)
		g.f.once()
	}
	g.f.s.Wait()
	bound := g.bound()
	lone := 0
	for _, p := range bound {
		if p[0] == 'x' {
			lone++
		}
	}
	for _, m := range []string{"g-0", "g-1", "g-2", "g-3"} {
		if !slices.Contains(bound, m) {
			t.Errorf("member %s not bound; bound %v; reported %q", m, bound, g.r.failures)
		}
	}
	if lone > 3 {
		t.Errorf("%d lone pods bound on the 3 GPUs the gang leaves: %v", lone, bound)
	}
	g.noDeviceTwice(claims)
	for _, c := range claims {
		if p := g.fw.Framework().SharedDRAManager().ResourceClaims().GetPendingAllocation(c.UID); p != nil {
			t.Errorf("claim %s still in flight after every binding ended: %v", c.Name, p)
		}
	}
}

// noDeviceTwice fails the test if two of claims, as the server holds
// them, are allocated the same device.
func (g *draGang) noDeviceTwice(claims []*resourceapi.ResourceClaim) {
	g.f.t.Helper()
	owner := map[string]string{}
	for _, c := range claims {
		got, err := g.client.ResourceV1().ResourceClaims(c.Namespace).Get(context.Background(), c.Name, metav1.GetOptions{})
		if err != nil {
			g.f.t.Fatal(err)
		}
		if got.Status.Allocation == nil {
			continue
		}
		for _, r := range got.Status.Allocation.Devices.Results {
			dev := r.Pool + "/" + r.Device
			if o, ok := owner[dev]; ok {
				g.f.t.Errorf("device %s allocated to claims %s and %s", dev, o, c.Name)
			}
			owner[dev] = c.Name
		}
	}
}

// TestFrameworkGangMemberSharesTwoClaims: g-1 shares claim "left" with
// g-0 and claim "right" with g-2, on n1's two GPUs; the PreBinds run on
// the cycle, in the members' order. g-0's PreBind allocates "left", so
// g-1's derives its state again while "right" is still in flight for it
// and g-2: every member binds, "left" and "right" each allocated once.
func TestFrameworkGangMemberSharesTwoClaims(t *testing.T) {
	claims := []*resourceapi.ResourceClaim{namedGPUClaim("left"), namedGPUClaim("right")}
	g := newDRAGangOn(t, gpusSlice("n1", 2), claims, true, nil)
	uses := [][]string{{"left"}, {"left", "right"}, {"right"}}
	g.f.addFWGang("g", 3, 3, func(i int, p *v1.Pod) { usesClaims(p, uses[i]...) })
	out := g.f.once()
	g.f.s.Wait()
	if bound := g.bound(); !slices.Equal(bound, []string{"g-0", "g-1", "g-2"}) {
		t.Fatalf("outcome %+v; bound %v, want every member; reported %q", out, bound, g.r.failures)
	}
	g.noDeviceTwice(claims)
	for _, c := range claims {
		got, err := g.client.ResourceV1().ResourceClaims(c.Namespace).Get(context.Background(), c.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allocation == nil || len(got.Status.ReservedFor) != 2 {
			t.Errorf("claim %s: allocation %v, reserved for %v; want allocated, reserved for two members", c.Name, got.Status.Allocation, got.Status.ReservedFor)
		}
	}
}

// TestFrameworkGangRederiveFailureGivesBack: two members share claim
// "shared" and have a claim of their own each; the PreBinds run on the
// cycle. While the first PreBind writes "shared", the other member's own
// claim starts being deleted, so that member's rederive fails: it does
// not bind, and what it held in flight is given back (nothing is left in
// flight), while the first member binds.
func TestFrameworkGangRederiveFailureGivesBack(t *testing.T) {
	claims := []*resourceapi.ResourceClaim{namedGPUClaim("shared"), namedGPUClaim("own-0"), namedGPUClaim("own-1")}
	g := newDRAGangOn(t, gpusSlice("n1", 3), claims, true, nil)
	var once sync.Once
	doomed := ""
	g.client.PrependReactor("update", "resourceclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u := a.(clienttesting.UpdateAction)
		in := u.GetObject().(*resourceapi.ResourceClaim)
		if u.GetSubresource() != "status" || in.Name != "shared" || len(in.Status.ReservedFor) == 0 {
			return false, nil, nil
		}
		once.Do(func() {
			other := map[string]string{"g-0": "g-1", "g-1": "g-0"}[in.Status.ReservedFor[0].Name]
			doomed = other
			c := namedGPUClaim("own-" + other[len(other)-1:])
			now := metav1.Now()
			c.DeletionTimestamp, c.ResourceVersion = &now, "2"
			if err := g.fw.UpdateObject(c); err != nil {
				t.Error(err)
			}
		})
		return false, nil, nil
	})
	g.f.addFWGang("g", 2, 2, func(i int, p *v1.Pod) { usesClaims(p, "shared", fmt.Sprintf("own-%d", i)) })
	g.f.once()
	g.f.s.Wait()
	if doomed == "" {
		t.Fatal("no PreBind wrote claim shared")
	}
	if bound := g.bound(); len(bound) != 1 || bound[0] == doomed {
		t.Errorf("bound %v, want the member other than %s only; reported %q", bound, doomed, g.r.failures)
	}
	for _, c := range claims {
		if p := g.fw.Framework().SharedDRAManager().ResourceClaims().GetPendingAllocation(c.UID); p != nil {
			t.Errorf("claim %s still in flight after the failed rederive's binding ended: %v", c.Name, p)
		}
	}
	g.noDeviceTwice(claims)
}
