package plugins

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/framework"
)

// RoomLedger keeps the room that nodes have promised to pods the queue
// woke for them, across the queue's events, as NodeResourcesFit counts
// room: a node's room is its allocatable, less what its pods (bound and
// assumed) request, less what it has promised, less what the pods
// nominated to it hold (NodeRoom.UseNominated). One ledger serves one
// queue; it is used under the queue's lock only, so it needs none.
//
// The ledger reads the scheduler's cache through a RoomSource, under the
// queue's lock: the source must never wait for a lock that is held by a
// goroutine waiting for the queue (the cache's own lock is such a lock).
type RoomLedger struct {
	src      RoomSource
	check    func(*v1.Pod) RoomCheck
	promised map[string]*promise
	holding  map[nodePod]int // the pods holding a promise, by node, and how many
	// Class, if set, is the queue's Config.HintClass: a pod nominated to
	// a node does not keep a pod of its own class out of its room (see
	// NodeRoom.Take). Nil: only the pod itself is left out.
	Class func(*v1.Pod) uint64
}

// RoomCheck is how NodeResourcesFit checks a pod's room: Skip, if not
// nil, says which resources it leaves unchecked on a node that has alloc
// of them (see profile.Framework.FitSkips), and None that it checks none
// (the pod's profile runs no NodeResourcesFit filter).
type RoomCheck struct {
	Skip func(name v1.ResourceName, alloc int64) bool
	None bool
}

// RoomSource is what the ledger reads of the cluster: a published copy of
// each node's allocatable, of what its pods request and of how many they
// are, and whether a pod is placed on a node (bound or assumed). Its
// methods are called under the queue's lock, so they may take only a
// lock that is a leaf. The scheduler's Cache implements it.
type RoomSource interface {
	NodeRoom(node string) (alloc, used framework.Resource, pods int64, ok bool)
	Placed(key types.NamespacedName) bool
}

type promise struct {
	res  framework.Resource
	pods int64
}

// nodePod is a pod holding promises of one node's room
// (RoomLedger.holding): a nominee's promise on another node, made by
// an event there, is not counted in this node's, so it still holds its
// room here (NodeRoom.held).
type nodePod struct {
	node string
	pod  types.NamespacedName
}

// NewRoomLedger returns an empty ledger over src. skip, if not nil,
// says which resources NodeResourcesFit leaves unchecked on a node that
// has alloc of them (see profile.Framework.FitSkips): a pod's request of
// such a resource never keeps it from fitting. It is called under the
// queue's lock, so it may take only a leaf lock.
func NewRoomLedger(src RoomSource, skip func(name v1.ResourceName, alloc int64) bool) *RoomLedger {
	return NewRoomLedgerBy(src, func(*v1.Pod) RoomCheck { return RoomCheck{Skip: skip} })
}

// NewRoomLedgerBy is NewRoomLedger with each pod's room checked as check
// says for it (several profiles: as the pod's own profile checks it). A
// pod whose check is None fits any node and is promised nothing. check
// is called under the queue's lock, as skip is.
func NewRoomLedgerBy(src RoomSource, check func(*v1.Pod) RoomCheck) *RoomLedger {
	return &RoomLedger{src: src, check: check, promised: map[string]*promise{}, holding: map[nodePod]int{}}
}

// Room returns the room of the named node, as a schedq.Budget.
func (l *RoomLedger) Room(node string) *NodeRoom { return l.RoomFreedBy(node, nil) }

// RoomFreedBy is Room for the event of gone's deletion from the node
// (nil: another event): gone's departure may also let pods onto other
// nodes of a topology domain it shared with the node, which the room
// does not limit (see NodeRoom.Take).
func (l *RoomLedger) RoomFreedBy(node string, gone *v1.Pod) *NodeRoom {
	return &NodeRoom{l: l, node: node, gone: gone, to: map[types.NamespacedName]framework.Resource{}}
}

// fits reports whether the node, with what it promised and what held
// holds (nheld pods requesting it), can hold one more pod requesting req,
// skip's resources unchecked; a node that is gone cannot.
func (l *RoomLedger) fits(node string, req, held framework.Resource, nheld int64, skip func(v1.ResourceName, int64) bool) bool {
	alloc, requested, pods, found := l.src.NodeRoom(node)
	if !found {
		return false
	}
	var used framework.Resource // a copy: Add writes into Scalar
	used.Add(requested)
	used.Add(held)
	pods += nheld
	if p := l.promised[node]; p != nil {
		used.Add(p.res)
		pods += p.pods
	}
	return fits(req, alloc, used, pods, skip)
}

// fits reports whether a node with allocatable alloc, whose pods number
// pods and request used in all, has room for one more pod requesting
// req, as NodeResourcesFit counts room: a pod slot, cpu, memory,
// ephemeral storage and each extended resource the pod requests, but
// those skip (if not nil) says it leaves unchecked.
// O(extended resources requested).
func fits(req, alloc, used framework.Resource, pods int64, skip func(v1.ResourceName, int64) bool) bool {
	if pods+1 > alloc.Pods {
		return false
	}
	if req.MilliCPU > 0 && req.MilliCPU > alloc.MilliCPU-used.MilliCPU ||
		req.Memory > 0 && req.Memory > alloc.Memory-used.Memory ||
		req.EphemeralStorage > 0 && req.EphemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		return false
	}
	for name, q := range req.Scalar {
		if q > 0 && q > alloc.Scalar[name]-used.Scalar[name] && (skip == nil || !skip(name, alloc.Scalar[name])) {
			return false
		}
	}
	return true
}

func (l *RoomLedger) promise(node string, key types.NamespacedName, req framework.Resource, sign int64) {
	at := nodePod{node, key}
	if l.holding[at] += int(sign); l.holding[at] <= 0 {
		delete(l.holding, at)
	}
	p := l.promised[node]
	if p == nil {
		p = &promise{}
		l.promised[node] = p
	}
	if sign > 0 {
		p.res.Add(req)
	} else {
		p.res.Sub(req)
	}
	if p.pods += sign; p.pods == 0 {
		delete(l.promised, node)
	}
}

// NodeRoom is one event's room on one node: a schedq.Budget. Take promises
// a pod room if the node can hold it now, besides what it promised
// already; Return takes the promise back when the pod's attempt ended.
type NodeRoom struct {
	l         *RoomLedger
	node      string
	gone      *v1.Pod // the deleted pod that made the room, or nil
	to        map[types.NamespacedName]framework.Resource
	nominated func(node string) []*v1.Pod // the queue's nominations, or nil
}

var _ schedq.NominatedBudget[*v1.Pod] = (*NodeRoom)(nil)

// UseNominated implements schedq.NominatedBudget: nominated lists the
// pods the queue has nominated to a node.
func (r *NodeRoom) UseNominated(nominated func(node string) []*v1.Pod) { r.nominated = nominated }

// held returns what the pods nominated to the node hold of its room
// against pod, and how many they are, as kube-scheduler's filters count
// them for pod: those of pod's priority or higher, not placed on a node
// yet (an assumed or bound pod's room is counted as its node's), and
// holding no promise of the ledger on this node (which is counted
// already; one on another node is not counted here). Neither
// pod itself nor a pod of its class (RoomLedger.Class) is counted: the
// queue offers a class's room to one pod of it for all, and a nominee
// must not be kept out by its own room. O(nominated pods of the node).
func (r *NodeRoom) held(pod *v1.Pod) (framework.Resource, int64) {
	var res framework.Resource
	if r.nominated == nil {
		return res, 0
	}
	noms := r.nominated(r.node)
	if len(noms) == 0 {
		return res, 0
	}
	key, prio := framework.Key(pod), framework.Priority(pod)
	var class uint64
	classed := false
	var n int64
	for _, p := range noms {
		k := framework.Key(p)
		if k == key || framework.Priority(p) < prio || r.l.holding[nodePod{r.node, k}] > 0 || r.l.src.Placed(k) {
			continue
		}
		if r.l.Class != nil && framework.Priority(p) == prio {
			if !classed {
				class, classed = r.l.Class(pod), true
			}
			if r.l.Class(p) == class {
				continue
			}
		}
		req, _ := framework.RequestsOf(p)
		res.Add(req)
		n++
	}
	return res, n
}

// Key implements schedq.Budget: the events of one node share its room.
func (r *NodeRoom) Key() string { return r.node }

// Take promises pod room on the node if it fits, besides the room of the
// pods nominated to the node that kube-scheduler's filters would count
// against pod (held). A pod whose room is
// checked by no NodeResourcesFit filter (RoomCheck.None) fits without a
// promise. A pod that the deleted
// pod counted against in a domain wider than one node (ReachesBeyond) is
// taken without a promise: the event may let it onto another node of the
// domain, whose room this budget does not know, as kube-scheduler's hints
// say.
func (r *NodeRoom) Take(pod *v1.Pod) bool {
	if r.gone != nil && ReachesBeyond(pod, r.gone) {
		return true
	}
	check := r.l.check(pod)
	if check.None {
		return true
	}
	req, _ := framework.RequestsOf(pod) // clamped if invalid
	held, nheld := r.held(pod)
	if !r.l.fits(r.node, req, held, nheld, check.Skip) {
		return false
	}
	r.l.promise(r.node, framework.Key(pod), req, 1)
	r.to[framework.Key(pod)] = req
	return true
}

// Return takes back the room promised to pod. It reports whether room may
// have come back: yes if the pod was placed nowhere. If it was placed, here
// or elsewhere, it used room that some node had (the scheduler places a
// pod where it fits best, not where it was promised room), and the pods
// still holding promises will find what is left; the queue offers this
// node's room once more when the last of them ends.
func (r *NodeRoom) Return(pod *v1.Pod) bool {
	key := framework.Key(pod)
	if req, ok := r.to[key]; ok {
		delete(r.to, key)
		r.l.promise(r.node, key, req, -1)
	}
	return !r.l.src.Placed(key)
}
