package sim

import (
	"context"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/scheduler"
)

// PreemptionSpec turns preemption on in the simulated scheduler, as
// kube-scheduler's DefaultPreemption: a pod that fits nowhere evicts pods
// of lower priority. Absent, there is no preemption.
type PreemptionSpec struct {
	// RecreateVictims creates each victim again as a new pending pod, as
	// its controller would.
	RecreateVictims bool `yaml:"recreateVictims"`
	// GracePeriod is the virtual time a victim spends terminating (still
	// on its node) before it leaves. Default 0: it leaves as soon as the
	// API server takes the deletion, after the bind latency.
	GracePeriod time.Duration `yaml:"gracePeriod"`
	// PodGracePeriods makes each victim terminate for its own
	// spec.terminationGracePeriodSeconds instead (30 s where unset, the
	// API server's default), as kube-scheduler's eviction, which deletes
	// a victim with no grace period of its own, leaves it to a kubelet
	// that waits the whole period out. Refused beside a GracePeriod.
	PodGracePeriods bool `yaml:"podGracePeriods"`
}

// PreemptionSummary counts the preemptions of a run.
type PreemptionSummary struct {
	// Preemptions is how many times a pod chose victims (a nomination to
	// room pods already leaving free, with none, is not one); Victims how many
	// pods were evicted in all (a victim deleted otherwise before its
	// eviction came is not one), and Recreated how many came back.
	Preemptions int `json:"preemptions"`
	Victims     int `json:"victims"`
	Recreated   int `json:"recreated,omitempty"`
	// ByPriority counts the victims and the preemptors per priority.
	ByPriority []PreemptionCount `json:"byPriority,omitempty"`
}

// PreemptionCount is, for one priority, how many of its pods preempted
// and how many were preempted.
type PreemptionCount struct {
	Priority   int32 `json:"priority"`
	Preemptors int   `json:"preemptors"`
	Victims    int   `json:"victims"`
}

// preemptions is the simulator's record of preemptions.
type preemptions struct {
	spec        *PreemptionSpec
	preemptions int
	victims     int
	recreated   int
	byPrio      map[int32]*PreemptionCount
}

// preemption returns the preemption options of the scenario's
// scheduler, nil if the scenario asks for none, and sets up the record
// of its preemptions.
func (s *sim) preemption() (*scheduler.PreemptionOptions, error) {
	spec := s.sc.Scheduler.Preemption
	if spec == nil {
		return nil, nil
	}
	if spec.GracePeriod < 0 {
		return nil, fmt.Errorf("scenario: scheduler.preemption.gracePeriod: %v is negative", spec.GracePeriod)
	}
	if spec.PodGracePeriods && spec.GracePeriod != 0 {
		return nil, fmt.Errorf("scenario: scheduler.preemption: gracePeriod %v and podGracePeriods both set; choose one", spec.GracePeriod)
	}
	s.pre = &preemptions{spec: spec, byPrio: map[int32]*PreemptionCount{}}
	return &scheduler.PreemptionOptions{Evictor: evictor{s}, Budgets: s.budgetsNow}, nil
}

// features are the optional parts of the scenario's scheduler, enabled
// through scheduler.Scheduler.Enable as the live scheduler's terms
// enable theirs: preemption if the scenario asks for it, and gang
// release (gangRelease).
func (s *sim) features() (scheduler.Features, error) {
	pre, err := s.preemption()
	if err != nil {
		return scheduler.Features{}, err
	}
	return scheduler.Features{Preemption: pre, GangRelease: s.gangRelease()}, nil
}

// defaultPodGrace is the grace period the API server gives a pod that
// sets none (spec.terminationGracePeriodSeconds defaults to 30).
const defaultPodGrace = 30 * time.Second

// graceOf is how long victim v terminates before it leaves: its own
// grace period with PodGracePeriods, else the scenario's GracePeriod.
// O(1).
func (p *preemptions) graceOf(v *v1.Pod) time.Duration {
	if !p.spec.PodGracePeriods {
		return p.spec.GracePeriod
	}
	if s := v.Spec.TerminationGracePeriodSeconds; s != nil {
		return time.Duration(max(*s, 0)) * time.Second
	}
	return defaultPodGrace
}

func (p *preemptions) count(prio int32) *PreemptionCount {
	c := p.byPrio[prio]
	if c == nil {
		c = &PreemptionCount{Priority: prio}
		p.byPrio[prio] = c
	}
	return c
}

// evictor deletes victims as the API server would: after the bind
// latency, and, with a grace period, after they have terminated. The
// simulated cluster keeps no status.nominatedNodeName: the nominations,
// the preemptor's and those p.Unnominated lost, live in the queue only.
type evictor struct{ s *sim }

// Wait implements scheduler.Evictor: the evictions are events of the
// simulation's own loop, which no term's end waits for.
func (e evictor) Wait() {}

// Preempt implements scheduler.Evictor.
func (e evictor) Preempt(_ context.Context, p scheduler.Preemption, done func([]error)) {
	s := e.s
	victims := p.Victims
	if len(victims) > 0 {
		// With none, the preemptor is only nominated to room pods
		// leaving free already: it evicts no one, and is no preemptor.
		s.pre.preemptions++
		s.pre.count(framework.Priority(p.Preemptor)).Preemptors++
	}
	preemptor := framework.Key(p.Preemptor)
	s.at(s.now.Add(s.apiLatency()), func() {
		for _, v := range victims {
			if s.evict(framework.Key(v), v.UID) && s.x.victimsOf != nil {
				s.x.victimsOf[preemptor] = append(s.x.victimsOf[preemptor], framework.Key(v))
			}
		}
		done(nil)
	})
}

// evict deletes the pod with key if it is still the one with uid (a
// victim already gone is skipped), at once or, if it is on a node, after
// its grace period, and reports whether it did.
func (s *sim) evict(key types.NamespacedName, uid types.UID) bool {
	cur := s.cl.pods[key]
	if cur == nil || cur.UID != uid || cur.DeletionTimestamp != nil {
		return false
	}
	// Counted here, not when chosen: a victim gone before its eviction
	// came was never evicted, and Victims is the pods that end preempted.
	s.pre.victims++
	s.pre.count(framework.Priority(cur)).Victims++
	grace := s.pre.graceOf(cur)
	if grace <= 0 || cur.Spec.NodeName == "" {
		// The API server deletes a pod that is not scheduled at once,
		// whatever its grace period: a victim whose binding failed
		// meanwhile (its node removed) has nothing to terminate.
		s.removeVictim(cur)
		return true
	}
	term := *cur // shallow, as bindDone: maps and slices are never changed in place
	term.DeletionTimestamp = &metav1.Time{Time: s.now}
	s.cl.pods[key] = &term
	s.h.UpdatePod(cur, &term)
	s.at(s.now.Add(grace), func() {
		if p := s.cl.pods[key]; p != nil && p.UID == uid {
			s.removeVictim(p)
		}
	})
	return true
}

// removeVictim deletes a victim from the cluster and, if the scenario
// says so, creates it again as a new pending pod.
func (s *sim) removeVictim(p *v1.Pod) {
	s.preempted(p)
	delete(s.cl.pods, framework.Key(p))
	s.h.DeletePod(p)
	if !s.pre.spec.RecreateVictims {
		return
	}
	again := p.DeepCopy()
	again.Spec.NodeName = ""
	again.UID = s.cl.nextUID()
	again.Status = v1.PodStatus{}
	again.DeletionTimestamp = nil
	s.pre.recreated++
	s.arrive(again)
}

// summary returns the report's preemption counts, nil when preemption
// was off.
func (p *preemptions) summary() *PreemptionSummary {
	if p == nil {
		return nil
	}
	out := &PreemptionSummary{Preemptions: p.preemptions, Victims: p.victims, Recreated: p.recreated}
	for _, c := range p.byPrio {
		out.ByPriority = append(out.ByPriority, *c)
	}
	sort.Slice(out.ByPriority, func(i, j int) bool { return out.ByPriority[i].Priority > out.ByPriority[j].Priority })
	return out
}

// writePreemption prints the preemption counts, when preemption was on.
func (r *Report) writePreemption(p func(string, ...any)) {
	x := r.Preemption
	if x == nil {
		return
	}
	line := fmt.Sprintf("preemption       %d preemptions, %d victims", x.Preemptions, x.Victims)
	if x.Recreated > 0 {
		line += fmt.Sprintf(", %d recreated", x.Recreated)
	}
	p("%s", line)
	for _, c := range x.ByPriority {
		p("  priority %-6d %d preemptors, %d victims", c.Priority, c.Preemptors, c.Victims)
	}
}

// Nominate, Nomination, Nominated and NominatedTargets give the scheduler
// the queue's nominations (part of scheduler.Queue).
func (q coreQueue) Nominate(k types.NamespacedName, node string) error {
	return q.c.Nominate(k, node)
}

func (q coreQueue) Nomination(k types.NamespacedName) (string, bool) { return q.c.Nomination(k) }

func (q coreQueue) Nominated(node string) []*v1.Pod { return q.c.Nominated(node) }

func (q coreQueue) NominatedTargets() []string { return q.c.NominatedTargets() }
