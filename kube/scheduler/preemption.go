package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
)

// Candidate is a node where preemption makes room for a pod: the pods to
// evict there, most important first, and how many of them a
// PodDisruptionBudget forbids disrupting.
type Candidate struct {
	Node          string
	Victims       []*v1.Pod
	PDBViolations int
}

// The defaults of how many candidates a search looks for, as
// kube-scheduler's DefaultPreemption arguments: 10% of the nodes, at
// least 100.
const (
	DefaultMinCandidateNodesPercentage = 10
	DefaultMinCandidateNodesAbsolute   = 100
)

// search is one preemption search: the preemptor, the filters and cycle
// state its PreFilter left, the budgets, and the nominated pods each node
// must keep room for. Its scratch buffers make the search allocate little
// per node. Not safe for concurrent use.
type search struct {
	pod       *framework.PodInfo
	prio      int32
	filters   []framework.FilterPlugin
	state     *framework.CycleState
	budgets   *budgets
	nominated map[string][]*framework.PodInfo
	// leaving are the victims handed to the Evictor that the cache may
	// not show terminating yet: they count as terminating.
	leaving map[types.UID]time.Time
	// exts are the PreFilter plugins that ran and keep their state right
	// as pods come and go; with none, every node shares state.
	exts []framework.PreFilterExtensions

	node                       framework.NodeInfo
	potential, violating, fine []*framework.PodInfo
	// reasons counts why nodes are not candidates, for the message.
	reasons map[string]int
}

// noLowerPriority is the reason a node with nothing to evict is not a
// candidate.
const noLowerPriority = "No preemption victims found for incoming pod"

// onNode finds the fewest, least important victims on ni that let the
// pod pass the filters, and reports whether there are any such. The
// candidate may have no victims: the pods terminating there free enough. Every pod
// of lower priority, and every pod terminating, is taken out, the nominated pods that outrank the pod
// are put in; if the pod then fits, the potential victims are put back
// one by one, those a budget protects first and the most important first
// within each group, each staying if the pod still fits. O(v*f) for v
// potential victims and f filter calls.
func (x *search) onNode(ctx context.Context, ni *framework.NodeInfo) (Candidate, bool) {
	x.potential = x.potential[:0]
	for _, p := range ni.Pods {
		if framework.Priority(p.Pod) < x.prio && !x.terminating(p.Pod) {
			x.potential = append(x.potential, p)
		}
	}
	if len(x.potential) == 0 {
		x.reasons[noLowerPriority]++
		return Candidate{}, false
	}
	// Pods already terminating are leaving: their room is counted free
	// (the nominated pods that outrank the preemptor claim it first), and
	// they are never chosen again.
	ni.CopyInto(&x.node, func(p *framework.PodInfo) bool {
		return framework.Priority(p.Pod) >= x.prio && !x.terminating(p.Pod)
	})
	state := x.nodeState(ctx, ni)
	for _, p := range x.nominated[ni.Name()] {
		x.node.AddPod(p)
		x.added(ctx, state, p)
	}
	if st := filter(ctx, x.filters, state, x.pod, &x.node); !st.IsSuccess() {
		for _, r := range st.Reasons {
			x.reasons[r+" (even without lower-priority pods)"]++
		}
		if len(st.Reasons) == 0 {
			x.reasons[st.Plugin+" rejects it even without lower-priority pods"]++
		}
		return Candidate{}, false
	}
	slices.SortStableFunc(x.potential, moreImportant)
	x.violating, x.fine = x.budgets.split(x.potential, x.violating[:0], x.fine[:0])
	c := Candidate{Node: ni.Name()}
	reprieve := func(p *framework.PodInfo, protected bool) {
		x.node.AddPod(p)
		x.added(ctx, state, p)
		if filter(ctx, x.filters, state, x.pod, &x.node).IsSuccess() {
			return
		}
		x.node.RemovePod(framework.Key(p.Pod))
		x.removed(ctx, state, p)
		c.Victims = append(c.Victims, p.Pod)
		if protected {
			c.PDBViolations++
		}
	}
	for _, p := range x.violating {
		reprieve(p, true)
	}
	for _, p := range x.fine {
		reprieve(p, false)
	}
	// Victims from both groups, most important first.
	slices.SortStableFunc(c.Victims, func(a, b *v1.Pod) int { return morePod(a, b) })
	return c, true
}

// terminating reports whether p is leaving: terminating, or a victim
// being evicted.
func (x *search) terminating(p *v1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return true
	}
	_, ok := x.leaving[p.UID]
	return ok
}

// moreImportant orders pods by importance: higher priority first, then
// the one that started earlier.
func moreImportant(a, b *framework.PodInfo) int { return morePod(a.Pod, b.Pod) }

func morePod(a, b *v1.Pod) int {
	return cmp.Or(cmp.Compare(framework.Priority(b), framework.Priority(a)),
		startTime(a).Compare(startTime(b)))
}

// startTime is when a pod started, or was created if it has not.
func startTime(p *v1.Pod) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return p.CreationTimestamp.Time
}

// candidatesToFind is how many candidates a search over n nodes looks
// for before it stops: pct percent of them, at least abs, at most n.
func candidatesToFind(n, pct, abs int) int {
	if pct <= 0 {
		pct = DefaultMinCandidateNodesPercentage
	}
	if abs <= 0 {
		abs = DefaultMinCandidateNodesAbsolute
	}
	return min(max(n*pct/100, abs), n)
}

// run visits nodes from offset, wrapping around, until it has found want
// candidates of which at least one violates no budget, or has seen every
// node. O(n*v*f) at worst.
func (x *search) run(ctx context.Context, nodes []*framework.NodeInfo, offset, want int) []Candidate {
	var out []Candidate
	fine := 0
	for i := range nodes {
		ni := nodes[(offset+i)%len(nodes)]
		c, ok := x.onNode(ctx, ni)
		if !ok {
			continue
		}
		out = append(out, c)
		if c.PDBViolations == 0 {
			fine++
		}
		if fine > 0 && len(out) >= want {
			break
		}
	}
	return out
}

// pickCandidate chooses among candidates: the first that needs no victim
// at all (the room is already being freed there, by pods terminating),
// else by kube-scheduler's criteria, in order, each breaking the ties of
// the one before: fewest budget violations; lowest highest-priority
// victim; lowest sum of priorities; fewest victims; latest start among
// the highest-priority victims; then the first found. O(c*v).
func pickCandidate(cands []Candidate) Candidate {
	for _, c := range cands {
		if len(c.Victims) == 0 {
			return c
		}
	}
	scores := []func(c *Candidate) int64{
		func(c *Candidate) int64 { return -int64(c.PDBViolations) },
		func(c *Candidate) int64 { return -int64(framework.Priority(c.Victims[0])) },
		func(c *Candidate) int64 {
			var sum int64
			for _, v := range c.Victims {
				// Shifted so that every term is positive: more victims of
				// a negative priority never look cheaper than fewer.
				sum += int64(framework.Priority(v)) + math.MaxInt32 + 1
			}
			return -sum
		},
		func(c *Candidate) int64 { return -int64(len(c.Victims)) },
		func(c *Candidate) int64 { return earliestTopStart(c.Victims).UnixNano() },
	}
	left := make([]int, len(cands))
	for i := range left {
		left[i] = i
	}
	for _, score := range scores {
		if len(left) == 1 {
			break
		}
		best, kept := int64(math.MinInt64), left[:0:0]
		for _, i := range left {
			switch s := score(&cands[i]); {
			case s > best:
				best, kept = s, append(kept[:0], i)
			case s == best:
				kept = append(kept, i)
			}
		}
		left = kept
	}
	return cands[left[0]]
}

// earliestTopStart is the earliest start among the victims of the highest
// priority (the victims are sorted most important first).
func earliestTopStart(victims []*v1.Pod) time.Time {
	if len(victims) == 0 {
		return time.Time{}
	}
	top := framework.Priority(victims[0])
	t := startTime(victims[0])
	for _, v := range victims[1:] {
		if framework.Priority(v) != top {
			break
		}
		if s := startTime(v); s.Before(t) {
			t = s
		}
	}
	return t
}

// message renders why no node is a candidate: "preemption: 0/5 nodes are
// available: 3 No preemption victims found for incoming pod, 2 Insufficient
// cpu (even without lower-priority pods)."
func (x *search) message(nodes int) string {
	keys := make([]string, 0, len(x.reasons))
	for r := range x.reasons {
		keys = append(keys, r)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, r := range keys {
		parts[i] = fmt.Sprintf("%d %s", x.reasons[r], r)
	}
	return fmt.Sprintf("preemption: 0/%d nodes are available: %s.", nodes, strings.Join(parts, ", "))
}

// nodeState returns the cycle state as it would be on ni without the pods
// the search took off it: a copy that the plugins with PreFilter
// extensions updated, or the cycle's own state when there are none.
func (x *search) nodeState(ctx context.Context, ni *framework.NodeInfo) *framework.CycleState {
	if len(x.exts) == 0 {
		return x.state
	}
	state := x.state.Clone()
	for _, p := range ni.Pods {
		if framework.Priority(p.Pod) < x.prio || x.terminating(p.Pod) {
			x.removedOn(ctx, state, p, ni)
		}
	}
	return state
}

func (x *search) added(ctx context.Context, state *framework.CycleState, p *framework.PodInfo) {
	for _, e := range x.exts {
		e.AddPod(ctx, state, x.pod, p, &x.node)
	}
}

func (x *search) removed(ctx context.Context, state *framework.CycleState, p *framework.PodInfo) {
	x.removedOn(ctx, state, p, &x.node)
}

func (x *search) removedOn(ctx context.Context, state *framework.CycleState, p *framework.PodInfo, ni *framework.NodeInfo) {
	for _, e := range x.exts {
		e.RemovePod(ctx, state, x.pod, p, ni)
	}
}
