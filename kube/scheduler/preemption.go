package scheduler

import (
	"cmp"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"

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

// morePod orders pods by importance: higher priority first, then the
// one that started earlier.
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
