package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/kube/framework"
)

// LifetimeSpec says how long a group's pods run once bound. A finished pod
// is deleted from the cluster, which frees its node.
type LifetimeSpec struct {
	// Distribution is fixed (default), uniform or exponential.
	Distribution string `yaml:"distribution"`
	// Mean is the fixed lifetime, or the distribution's mean (uniform
	// with only a mean draws from [0, 2·mean]).
	Mean time.Duration `yaml:"mean"`
	// Min and Max bound a uniform distribution instead of a mean.
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

func (l *LifetimeSpec) validate(f string, bad func(string, string, ...any)) {
	for _, d := range []struct {
		n string
		v time.Duration
	}{{"mean", l.Mean}, {"min", l.Min}, {"max", l.Max}} {
		if d.v < 0 {
			bad(f+"."+d.n, "must not be negative, got %v", d.v)
		}
	}
	bounds := l.Min != 0 || l.Max != 0
	switch l.Distribution {
	case "", "fixed", "exponential":
		if l.Mean <= 0 {
			bad(f+".mean", "must be positive for a %s lifetime", cmpOr(l.Distribution, "fixed"))
		}
		if bounds {
			bad(f, "min and max are for a uniform lifetime only")
		}
	case "uniform":
		switch {
		case bounds && l.Mean != 0:
			bad(f, "a uniform lifetime takes either a mean or min and max, not both")
		case bounds && l.Max <= l.Min:
			bad(f+".max", "must be greater than min (%v), got %v", l.Min, l.Max)
		case !bounds && l.Mean <= 0:
			bad(f+".mean", "must be positive (or set min and max)")
		}
	default:
		bad(f+".distribution", "%q is not fixed, uniform or exponential", l.Distribution)
	}
}

// draw returns the lifetime of pod i of group. The draw depends only on
// the seed, the group's name and i, not on the order of events, so two
// runs of one seed with different queue settings run the same workload.
func (l *LifetimeSpec) draw(seed uint64, group string, i int) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(group))
	rng := rand.New(rand.NewPCG(seed^0x11fe71e, h.Sum64()+uint64(i)))
	var d time.Duration
	switch l.Distribution {
	case "uniform":
		lo, hi := l.Min, l.Max
		if lo == 0 && hi == 0 {
			hi = 2 * l.Mean
		}
		d = lo + time.Duration(rng.Float64()*float64(hi-lo))
	case "exponential":
		d = time.Duration(rng.ExpFloat64() * float64(l.Mean))
	default:
		d = l.Mean
	}
	return d.Round(time.Millisecond)
}

// The ways a pod's run can end.
const (
	endFinished  = "finished"  // ran its lifetime and was deleted
	endDeleted   = "deleted"   // deleted while bound (an event, or its node removed)
	endPreempted = "preempted" // evicted to make room for a pod of higher priority
	endWithdrawn = "withdrawn" // deleted before it was bound
)

// podExt is what the simulator follows of a pod beyond podStat.
type podExt struct {
	group        string
	firstAttempt time.Time
	node         string
	ended        time.Time
	end          string // endFinished, endDeleted, endWithdrawn or ""
}

// onAttempt notes a pod's first scheduling attempt.
func (s *sim) onAttempt(st *podStat, p *v1.Pod) {
	if st.ext.firstAttempt.IsZero() {
		st.ext.firstAttempt = s.now
		st.ext.group = p.Labels["group"]
	}
}

// lifetime returns how long a pod runs once bound, if it ends at all:
// from the trace, or drawn for its group.
func (s *sim) lifetime(p *v1.Pod) (time.Duration, bool) {
	if d, ok := s.x.traceLife[framework.Key(p)]; ok {
		return d, true
	}
	g := s.x.groups[p.Labels["group"]]
	if g == nil || g.Lifetime == nil {
		return 0, false
	}
	i, err := strconv.Atoi(p.Name[strings.LastIndexByte(p.Name, '-')+1:])
	if err != nil {
		return 0, false
	}
	return g.Lifetime.draw(s.sc.Seed, g.Name, i), true
}

// onBound follows a pod just bound: its node, its allocation, and its end.
func (s *sim) onBound(p *v1.Pod) {
	if st := s.stats[p.UID]; st != nil {
		st.ext.node = p.Spec.NodeName
	}
	s.x.alloc.podAdded(s.now, p)
	d, ok := s.lifetime(p)
	if !ok {
		return
	}
	key, uid := framework.Key(p), p.UID
	s.at(s.now.Add(d), func() {
		cur := s.cl.pods[key]
		if cur == nil || cur.UID != uid || cur.Spec.NodeName == "" {
			return // deleted or replaced meanwhile
		}
		if cur.DeletionTimestamp != nil && s.pre != nil {
			// A victim terminating: its run ends early, and it leaves
			// as the victim it is (counted preempted, recreated as the
			// scenario says), not as a pod that finished its work.
			s.removeVictim(cur)
			return
		}
		s.ended(cur, endFinished)
		delete(s.cl.pods, key)
		s.h.DeletePod(cur)
	})
}

// preempted notes that a bound pod is about to be deleted to make room
// for another: preemption calls it before it deletes its victims.
func (s *sim) preempted(p *v1.Pod) { s.ended(p, endPreempted) }

// ended notes that a pod is about to be deleted from the cluster.
func (s *sim) ended(p *v1.Pod, how string) {
	if st := s.stats[p.UID]; st != nil && st.ext.end == "" {
		st.ext.end, st.ext.ended, st.ext.group = how, s.now, p.Labels["group"]
	}
	if p.Spec.NodeName != "" {
		s.x.alloc.podRemoved(s.now, p)
		s.gangEnded(p, how)
	}
	if s.x.gpu != nil {
		s.x.gpu.forget(p.UID)
	}
	s.releaseClaims(p)
}

// endings counts how the pods' runs ended.
func (s *sim) endings(r *Report) {
	for _, st := range s.order {
		switch st.ext.end {
		case endFinished:
			r.Finished++
		case endDeleted:
			r.DeletedBound++
		case endPreempted:
			r.Preempted++
		case endWithdrawn:
			r.Withdrawn++
		default:
			if !st.bound.IsZero() {
				r.Running++
			}
		}
	}
}

// writeEndings prints how the scheduled pods' runs ended, when some did.
func (r *Report) writeEndings(p func(string, ...any)) {
	if r.Finished+r.DeletedBound+r.Preempted+r.Withdrawn == 0 {
		return
	}
	preempted := ""
	if r.Preempted > 0 {
		preempted = fmt.Sprintf(", %d preempted", r.Preempted)
	}
	p("  ended          %d finished, %d deleted after binding%s, %d deleted while pending; %d still running",
		r.Finished, r.DeletedBound, preempted, r.Withdrawn, r.Running)
}
