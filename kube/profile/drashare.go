package profile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	fwk "k8s.io/kube-scheduler/framework"
	fwframework "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
)

// PodGroup members that share a claim nobody has allocated. Within a
// PodGroup cycle, upstream's DynamicResources lets every member after the
// first reuse the allocation the first one's Reserve holds in flight, and
// each member's state carries that allocation, to be written at its
// PreBind. The first PreBind writes it; each later one then finds the
// claim allocated and fails ("claim ... got allocated elsewhere in the
// meantime": kube-scheduler v1.37.2, kubernetes/kubernetes#140053).
//
// draMemo keeps, for a pod in a PodGroup cycle, which of its claims were
// unallocated at its PreFilter and the node Reserve was given (a
// draShare). At PreBind, with those claims locked against the PreBinds
// of the other pods that share them, if one of them has been allocated
// since by another pod and is not reserved for this one, it derives the
// pod's DynamicResources state again on that node, from the claims as
// they are now (rederive). Upstream's PreBind then only adds the pod to
// the claim's reservedFor (and writes the allocations of its own claims,
// if any). Whichever member's PreBind comes first writes the shared
// allocation, as upstream intends; the order does not matter.
//
// The rederive runs on the binding's goroutine while the scheduling loop
// runs other pods' cycles, whose PreFilter reads which devices are in
// flight and whose Reserve puts its own in flight: it must never leave
// the devices the member holds in flight free in between, or a cycle
// takes them (and, its PreFilter having read them free before the
// member's, the same devices end up allocated twice). So it gives back
// nothing before it holds its new state: it derives that state within
// the member's pod group cycle, where upstream's PreFilter reuses the
// allocations the member's claims still have in flight instead of
// allocating them again, reserves it (another share of each of those
// allocations), and only then unreserves the old state (its shares).

const draShareKey fwk.StateKey = "schedq.io/dra-share"

// draShare is what draMemo keeps of a PodGroup member's cycle: its claims
// unallocated at PreFilter, sorted by UID (the order they are locked
// in), the node of its Reserve, and its pod group cycle's state, which
// the member's own cycle state leaves before binding and which only
// rederives use from then on (under draMemo.regroup: upstream's pod
// group state has no lock of its own).
type draShare struct {
	claims []claimRef
	node   *v1.Node
	group  fwk.PodGroupCycleState
}

// Clone shares the record: it is written once per cycle, at PreFilter,
// and its node at Reserve, both on the scheduling loop.
func (s *draShare) Clone() fwk.StateData { return s }

type claimRef struct {
	ns, name string
	uid      types.UID
}

func shareOf(cs fwk.CycleState) *draShare {
	v, err := cs.Read(draShareKey)
	if err != nil {
		return nil
	}
	s, _ := v.(*draShare)
	return s
}

// noteShare records, for a pod in a PodGroup cycle, its claims that are
// not allocated. O(the pod's claims).
func (d *draMemo) noteShare(cs fwk.CycleState, pod *v1.Pod) {
	if cs.GetPodGroupSchedulingCycle() == nil {
		return
	}
	tracker := d.h.SharedDRAManager().ResourceClaims()
	var refs []claimRef
	for i := range pod.Spec.ResourceClaims {
		name, _, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil || name == nil {
			continue
		}
		c, err := tracker.Get(pod.Namespace, *name)
		if err != nil || c.Status.Allocation != nil {
			continue
		}
		refs = append(refs, claimRef{ns: c.Namespace, name: c.Name, uid: c.UID})
	}
	if len(refs) == 0 {
		return
	}
	slices.SortFunc(refs, func(a, b claimRef) int { return cmp.Compare(a.uid, b.uid) })
	refs = slices.CompactFunc(refs, func(a, b claimRef) bool { return a.uid == b.uid })
	cs.Write(draShareKey, &draShare{claims: refs, group: cs.GetPodGroupSchedulingCycle()})
}

// inFlightLast returns pod, or, if one of its claims that some pod
// holds in flight (unallocated, with an allocation pending) comes before
// one that is not, a shallow copy of it whose claims in flight come after
// the others, each part in the pod's order. Upstream's PreFilter gives
// it, in a PodGroup's cycle, to upstream's plugin, whose state lists the
// claims in that order: within such a cycle a member reuses another's
// allocation in flight, and upstream's Filter (kube-scheduler v1.37.2)
// lists the results of the claims it allocates before the allocations it
// reuses while its Reserve pairs them with the claims in the order of
// the pod, so that a member with a reused claim before one of its own
// would hold (and write) each claim's allocation under the other's name:
// devices in flight that the claim does not ask for, and its own devices
// not in flight. Only the state's order changes: upstream's later calls
// read the claims from the state, and the pod only for who it is and
// its containers. O(the pod's claims).
func (d *draMemo) inFlightLast(pod *v1.Pod) *v1.Pod {
	tracker := d.h.SharedDRAManager().ResourceClaims()
	var rest, inFlight []v1.PodResourceClaim
	for i := range pod.Spec.ResourceClaims {
		if claimInFlight(tracker, pod, &pod.Spec.ResourceClaims[i]) {
			inFlight = append(inFlight, pod.Spec.ResourceClaims[i])
		} else {
			rest = append(rest, pod.Spec.ResourceClaims[i])
		}
	}
	if len(inFlight) == 0 || slices.Equal(claimNames(pod.Spec.ResourceClaims[:len(rest)]), claimNames(rest)) {
		return pod
	}
	cp := *pod
	cp.Spec.ResourceClaims = append(rest, inFlight...)
	return &cp
}

// claimInFlight reports whether pc names a claim that is not allocated
// and has an allocation in flight.
func claimInFlight(tracker fwk.ResourceClaimTracker, pod *v1.Pod, pc *v1.PodResourceClaim) bool {
	name, _, err := resourceclaim.Name(pod, pc)
	if err != nil || name == nil {
		return false
	}
	c, err := tracker.Get(pod.Namespace, *name)
	return err == nil && c.Status.Allocation == nil && tracker.GetPendingAllocation(c.UID) != nil
}

// claimNames lists the names of pod claims.
func claimNames(pcs []v1.PodResourceClaim) []string {
	names := make([]string, len(pcs))
	for i, pc := range pcs {
		names[i] = pc.Name
	}
	return names
}

// noteNode records the node of a PodGroup member's Reserve, read from the
// snapshot (on the scheduling loop), for a later rederive.
func (d *draMemo) noteNode(cs fwk.CycleState, nodeName string) {
	sh := shareOf(cs)
	if sh == nil {
		return
	}
	sh.node = nil
	if ni, err := d.h.SnapshotSharedLister().NodeInfos().Get(nodeName); err == nil {
		sh.node = ni.Node()
	}
}

// PreBind is upstream's, after a rederive for a PodGroup member one of
// whose claims another pod has allocated since its PreFilter (see above).
func (d *draMemo) PreBind(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	sh := shareOf(cs)
	if sh == nil {
		return d.DynamicResources.PreBind(ctx, cs, pod, nodeName)
	}
	defer d.locks.lock(sh.claims)()
	if d.allocatedSince(sh, pod) {
		if st := d.rederive(ctx, cs, pod, nodeName, sh); !st.IsSuccess() {
			return st
		}
	}
	return d.DynamicResources.PreBind(ctx, cs, pod, nodeName)
}

// allocatedSince reports whether one of sh's claims is allocated now and
// not reserved for pod (nor for its PodGroup).
func (d *draMemo) allocatedSince(sh *draShare, pod *v1.Pod) bool {
	tracker := d.h.SharedDRAManager().ResourceClaims()
	for _, r := range sh.claims {
		c, err := tracker.Get(r.ns, r.name)
		if err == nil && c.UID == r.uid && c.Status.Allocation != nil && !resourceclaim.IsReservedForPod(pod, c, true) {
			return true
		}
	}
	return false
}

// errNoShareNode is a rederive's error for a member whose Reserve's node
// was not in the snapshot.
var errNoShareNode = errors.New("DynamicResources: the node of the pod's Reserve is not known")

// draStateKey is where upstream's DynamicResources keeps a pod's state
// in its cycle state.
const draStateKey fwk.StateKey = dynamicresources.Name

// rederive replaces pod's DynamicResources state with one derived on
// nodeName from the claims as they are now, without ever giving back
// what the member holds in flight first (see above): PreFilter, Filter
// on the node and Reserve on a cycle state of their own within the
// member's pod group cycle (so that PreFilter reuses the allocations
// still in flight for the member's claims, and Reserve takes another
// share of each), then Unreserve of the old state (its shares, and
// nothing of the new one's) and the new state in its place. If a step
// fails the member keeps its old state, which the failed binding's
// Unreserve gives back. Filter is given a NodeInfo of the node alone,
// which is all upstream's Filter reads but with the
// DRANodeAllocatableResources gate, under which the registry gives
// upstream's plugin itself. Callers hold the claims' locks.
func (d *draMemo) rederive(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string, sh *draShare) *fwk.Status {
	if sh.node == nil || sh.node.Name != nodeName {
		return fwk.AsStatus(errNoShareNode)
	}
	if sh.group == nil {
		return fwk.AsStatus(errNoShareGroup)
	}
	d.regroup.Lock()
	defer d.regroup.Unlock()
	fresh := fwframework.NewCycleState()
	fresh.SetPodGroupSchedulingCycle(sh.group)
	d.pre.Lock() // the tap is not armed: what this PreFilter reads is kept by no one
	_, st := d.DynamicResources.PreFilter(ctx, fresh, d.inFlightLast(pod), nil)
	d.pre.Unlock()
	if !st.IsSuccess() {
		return rederiveFailed("PreFilter", st)
	}
	ni := fwframework.NewNodeInfo()
	ni.SetNode(sh.node)
	if st := d.DynamicResources.Filter(ctx, fresh, pod, ni); !st.IsSuccess() {
		return rederiveFailed("Filter", st)
	}
	if st := d.DynamicResources.Reserve(ctx, fresh, pod, nodeName); !st.IsSuccess() {
		return rederiveFailed("Reserve", st)
	}
	state, err := fresh.Read(draStateKey)
	if err != nil {
		return fwk.AsStatus(err)
	}
	d.DynamicResources.Unreserve(ctx, cs, pod, nodeName)
	cs.Write(draStateKey, state)
	return nil
}

// errNoShareGroup is a rederive's error for a member whose PreFilter
// recorded no pod group cycle.
var errNoShareGroup = errors.New("DynamicResources: the pod's pod group cycle is not known")

// rederiveFailed is st, which stopped a rederive at step, with the step
// named; a Skip becomes an error (a pod with claims is never skipped).
func rederiveFailed(step string, st *fwk.Status) *fwk.Status {
	if st.IsSkip() {
		return fwk.AsStatus(fmt.Errorf("DynamicResources: deriving the pod's state again: %s skipped", step))
	}
	reasons := slices.Clone(st.Reasons())
	if len(reasons) == 0 {
		reasons = []string{st.Code().String()}
	}
	reasons[0] = "deriving the pod's state again, at " + step + ": " + reasons[0]
	return fwk.NewStatus(st.Code(), reasons...)
}

// claimLocks serialises the PreBinds of the PodGroup members that share
// a claim: each holds the locks of its claims unallocated at PreFilter,
// taken in UID order, from its check of the claims to the end of
// upstream's PreBind. A lock lives while some PreBind holds or waits for
// it. Lock order: the claims' locks, then draMemo's regroup and pre
// (dramemo.go); mu is never held while a claim's lock is waited for.
type claimLocks struct {
	mu   sync.Mutex
	held map[types.UID]*claimLock
	// waiting, if set, is told of each claim whose lock another PreBind
	// holds, before lock waits for it: a test waits for that, not on
	// the clock.
	waiting func(uid types.UID)
}

type claimLock struct {
	sync.Mutex
	users int // PreBinds holding or waiting for it
}

// lock takes the locks of refs (sorted by UID) and returns what releases
// them.
func (l *claimLocks) lock(refs []claimRef) (unlock func()) {
	taken := make([]*claimLock, 0, len(refs))
	for _, r := range refs {
		l.mu.Lock()
		if l.held == nil {
			l.held = map[types.UID]*claimLock{}
		}
		c := l.held[r.uid]
		if c == nil {
			c = &claimLock{}
			l.held[r.uid] = c
		}
		c.users++
		l.mu.Unlock()
		if !c.TryLock() {
			if l.waiting != nil {
				l.waiting(r.uid)
			}
			c.Lock()
		}
		taken = append(taken, c)
	}
	return func() {
		for i := len(taken) - 1; i >= 0; i-- {
			c := taken[i]
			c.Unlock()
			l.mu.Lock()
			if c.users--; c.users == 0 {
				delete(l.held, refs[i].uid)
			}
			l.mu.Unlock()
		}
	}
}
