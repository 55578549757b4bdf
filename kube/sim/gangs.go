package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/scheduler"
)

// GangSpec makes a pod group's pods gangs: each run of Size consecutive
// pods (the last run may be shorter) is one PodGroup
// (scheduling.k8s.io/v1beta1) named NAME-gI, with the gang policy's
// MinCount (default: Size) and the pods' priority. The PodGroup is
// created just before its first member arrives.
type GangSpec struct {
	Size     int `yaml:"size"`
	MinCount int `yaml:"minCount"`
}

func (g *GangSpec) validate(f string, bad func(string, string, ...any)) {
	if g.Size < 1 {
		bad(f+".size", "must be at least 1, got %d", g.Size)
	}
	if g.MinCount < 0 || g.MinCount > g.Size {
		bad(f+".minCount", "must be between 1 and size (%d), got %d", g.Size, g.MinCount)
	}
}

// validateLastGang refuses an explicit minCount above the members of the
// group's last gang, when count is not a multiple of size: that PodGroup
// could never be placed as asked. (Without minCount the last gang's
// minCount is its size.)
func (g *PodGroup) validateLastGang(f string, bad func(string, string, ...any)) {
	gg := g.Gang
	if gg.Size < 1 || gg.MinCount < 1 || gg.MinCount > gg.Size {
		return // refused by GangSpec.validate
	}
	if last := g.Count % gg.Size; last > 0 && gg.MinCount > last {
		bad(f+".minCount", "%d is more than the %d members of the last gang (count %d in gangs of %d): make count a multiple of size, or minCount at most %d",
			gg.MinCount, last, g.Count, gg.Size, last)
	}
}

func (g *GangSpec) minCount() int {
	if g.MinCount == 0 {
		return g.Size
	}
	return g.MinCount
}

// gangStat follows one gang through the run.
type gangStat struct {
	name     string // namespace/name
	size     int
	minCount int
	arrived  time.Time // its first member's arrival
	placed   time.Time // when its minCount-th member was first bound
	attempts int       // group attempts
	bound    int       // members bound now: bound and not yet ended
	// partly: at some instant with no binding under way, some but fewer
	// than minCount members were bound (with PodGroups, possible only
	// once the gang, placed, lost members: see checkGangs).
	partly bool
	// finished: a member ran its lifetime out; the gang is ending, and
	// fewer than minCount bound is no longer partial placement.
	finished bool
	// bindFailed: a member's binding failed (its node removed, say)
	// before the gang was placed; the scheduler retries the member with
	// its group (docs/gangs.md), and the gang may be partly bound until
	// then.
	bindFailed bool
}

// gangs is the run's gangs, in order of creation.
type gangs struct {
	byName  map[string]*gangStat
	order   []*gangStat
	partly  int // gangs with some but fewer than minCount members bound now
	waiting int // gangs arrived and not placed
	// singlesWhileWaiting counts the lone pods bound while some gang waited.
	singlesWhileWaiting int
	// lastFailed is, by group name, the reasons of the group's last
	// attempt if it failed (reasonKinds), for the wasted attempts.
	lastFailed map[string]string
}

// gangsOn reports whether the scenario's gangs are PodGroups (the
// scheduler's gangs setting; --compare gangs=false schedules the same pods
// one by one).
func (s *sim) gangsOn() bool { return s.sc.Scheduler.Gangs == nil || *s.sc.Scheduler.Gangs }

// gangMember makes pod i of g a member of its gang, creating the gang's
// PodGroup first if this is its first member.
func (s *sim) gangMember(g *PodGroup, i int, p *v1.Pod) {
	if g.Gang == nil {
		return
	}
	if s.x.gangs.byName == nil {
		s.x.gangs.byName = map[string]*gangStat{}
	}
	name := fmt.Sprintf("%s-g%d", g.Name, i/g.Gang.Size)
	key := p.Namespace + "/" + name
	gs := s.x.gangs.byName[key]
	if gs == nil {
		size := min(g.Gang.Size, g.Count-i/g.Gang.Size*g.Gang.Size)
		gs = &gangStat{name: key, size: size, minCount: min(g.Gang.minCount(), size), arrived: s.now}
		s.x.gangs.byName[key] = gs
		s.x.gangs.order = append(s.x.gangs.order, gs)
		s.x.gangs.waiting++
		if s.gangsOn() {
			s.h.AddPodGroup(s.podGroupObject(p.Namespace, name, int32(gs.minCount), g.Priority))
		}
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[gangAnnotation] = key
	if s.gangsOn() {
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
	}
}

// gangAnnotation carries a pod's gang in the simulator, with or without
// PodGroups, so that the report can say whether gangs were placed whole.
const gangAnnotation = "sim.schedq.io/gang"

func (s *sim) podGroupObject(ns, name string, minCount, priority int32) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	pg.Spec.Priority = &priority
	return pg
}

// groupAttempt runs one group attempt: it costs one attempt per member.
func (s *sim) groupAttempt(ctx context.Context, a scheduler.Attempt) {
	s.attempts++
	for _, m := range a.Members {
		if st := s.stats[m.Item.UID]; st != nil {
			st.attempts++
			s.onAttempt(st, m.Item)
		}
	}
	if gs := s.x.gangs.byName[a.Group]; gs != nil {
		gs.attempts++
	}
	cost := s.sc.Scheduler.AttemptCost
	if cost == 0 {
		cost = 5 * time.Millisecond
	}
	s.busyUntil = s.now.Add(cost * time.Duration(max(len(a.Members), 1)))
	if m := s.x.gpuDRA; m != nil {
		defer m.attemptEnded()
	}
	out := s.sched.ScheduleOne(ctx, a)
	// A group attempt that fails for the same reasons as the group's
	// last one is wasted, as a lone pod's is (attempt); it counts once,
	// as the attempt does.
	x := &s.x.gangs
	if out.Result == scheduler.Scheduled {
		delete(x.lastFailed, a.Group)
		return
	}
	reasons := reasonKinds(out)
	if last, ok := x.lastFailed[a.Group]; ok && last == reasons {
		s.wasted++
	}
	if x.lastFailed == nil {
		x.lastFailed = map[string]string{}
	}
	x.lastFailed[a.Group] = reasons
}

// gangBound follows a bound pod's gang.
func (s *sim) gangBound(p *v1.Pod) {
	x := &s.x.gangs
	gs := x.byName[p.Annotations[gangAnnotation]]
	if gs == nil {
		if x.waiting > 0 {
			x.singlesWhileWaiting++
		}
		return
	}
	x.partly -= gs.partlyNow()
	gs.bound++
	x.partly += gs.partlyNow()
	if gs.bound == gs.minCount && gs.placed.IsZero() {
		gs.placed = s.now
		x.waiting--
	}
}

// gangBindFailed notes that the binding of p, a gang member, failed:
// until the gang is placed, its being partly bound is what the scheduler
// documents, not a broken all-or-nothing.
func (s *sim) gangBindFailed(p *v1.Pod) {
	if gs := s.x.gangs.byName[p.Annotations[gangAnnotation]]; gs != nil && gs.placed.IsZero() {
		gs.bindFailed = true
	}
}

// gangEnded follows a bound pod's end (how: finished, deleted, preempted,
// or its node removed): its gang has one member bound fewer.
func (s *sim) gangEnded(p *v1.Pod, how string) {
	x := &s.x.gangs
	gs := x.byName[p.Annotations[gangAnnotation]]
	if gs == nil || p.Spec.NodeName == "" || gs.bound == 0 {
		return // not a gang's, or bound before the run (a snapshot's)
	}
	x.partly -= gs.partlyNow()
	gs.bound--
	gs.finished = gs.finished || how == endFinished
	x.partly += gs.partlyNow()
}

// partlyNow is 1 if some but fewer than minCount members are bound now,
// and the gang is not ending (no member finished).
func (gs *gangStat) partlyNow() int {
	if !gs.finished && gs.bound > 0 && gs.bound < gs.minCount {
		return 1
	}
	return 0
}

// checkGangs fails the run if, with no binding under way, a gang never
// placed is partly placed: with PodGroups, all-or-nothing must hold
// whenever the bindings settle, unless a member's binding failed (its
// members are retried with their group). A placed gang that lost members since
// (deleted, preempted, its node removed) is only noted for the report:
// the simulator does not release gangs, and its recreated members wait to
// complete it. Without PodGroups (gangs=false) every such gang is noted.
// O(1) unless some gang is partly bound, then O(gangs).
func (s *sim) checkGangs() error {
	if s.x.gangs.partly == 0 || s.binds > 0 {
		return nil
	}
	for _, gs := range s.x.gangs.order {
		if gs.partlyNow() == 0 {
			continue
		}
		if s.gangsOn() && gs.placed.IsZero() && !gs.bindFailed {
			return fmt.Errorf("at %v: gang %s is partly placed: %d of minCount %d members bound", s.now.Sub(epoch), gs.name, gs.bound, gs.minCount)
		}
		gs.partly = true
	}
	return nil
}

// GangSummary is what the report says of gangs.
type GangSummary struct {
	Gangs  int `json:"gangs"`
	Placed int `json:"placed"`
	// Waiting gangs were never placed and have no member bound at the
	// end; PartlyPlaced ones had some but fewer than minCount bound at
	// some instant with no binding under way (with PodGroups, only placed
	// gangs that lost members since: otherwise the run fails first).
	// GangStats.Bound is the members bound at the end.
	Waiting      int `json:"waiting"`
	PartlyPlaced int `json:"partlyPlaced"`
	// TimeToSchedule is from a gang's first arrival to its minCount-th
	// binding, over the placed gangs; Attempts counts group attempts.
	TimeToSchedule Percentiles `json:"timeToSchedule"`
	Attempts       Percentiles `json:"attempts"`
	// SinglesBoundWhileGangsWaited counts the lone pods bound while at
	// least one gang waited: gangs that cannot fit do not block them.
	SinglesBoundWhileGangsWaited int         `json:"singlesBoundWhileGangsWaited"`
	PerGang                      []GangStats `json:"perGang"`
}

// GangStats is one gang's figures; TimeToSchedule is -1 if never placed.
type GangStats struct {
	Name           string  `json:"name"`
	Size           int     `json:"size"`
	MinCount       int     `json:"minCount"`
	Bound          int     `json:"bound"`
	Attempts       int     `json:"attempts"`
	TimeToSchedule float64 `json:"timeToSchedule"`
}

// gangReport fills r.Gangs, if the scenario has gangs.
func (s *sim) gangReport(r *Report) {
	x := &s.x.gangs
	if len(x.order) == 0 {
		return
	}
	g := &GangSummary{Gangs: len(x.order), SinglesBoundWhileGangsWaited: x.singlesWhileWaiting}
	var waits, attempts []float64
	for _, gs := range x.order {
		st := GangStats{Name: gs.name, Size: gs.size, MinCount: gs.minCount, Bound: gs.bound, Attempts: gs.attempts, TimeToSchedule: -1}
		if gs.partly || gs.partlyNow() == 1 {
			g.PartlyPlaced++
		}
		switch {
		case !gs.placed.IsZero():
			g.Placed++
			st.TimeToSchedule = gs.placed.Sub(gs.arrived).Seconds()
			waits = append(waits, st.TimeToSchedule)
			attempts = append(attempts, float64(gs.attempts))
		case gs.bound == 0:
			g.Waiting++
		}
		g.PerGang = append(g.PerGang, st)
	}
	g.TimeToSchedule, g.Attempts = floatPercentiles(waits), floatPercentiles(attempts)
	r.Gangs = g
}

func floatPercentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	slices.Sort(xs)
	at := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
	return Percentiles{P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: xs[len(xs)-1]}
}

// writeGangs prints the gang summary, if any.
func (r *Report) writeGangs(p func(string, ...any)) {
	g := r.Gangs
	if g == nil {
		return
	}
	p("  gangs          %d: %d placed (minCount bound), %d waiting, %d ever partly placed", g.Gangs, g.Placed, g.Waiting, g.PartlyPlaced)
	p("  gang schedule  p50 %s  p90 %s  max %s (first arrival to minCount bound)", secs(g.TimeToSchedule.P50), secs(g.TimeToSchedule.P90), secs(g.TimeToSchedule.Max))
	p("  gang attempts  p50 %.0f  p90 %.0f  max %.0f", g.Attempts.P50, g.Attempts.P90, g.Attempts.Max)
	p("  lone pods bound while a gang waited: %d", g.SinglesBoundWhileGangsWaited)
	for _, gs := range g.PerGang {
		when := "not placed"
		if gs.TimeToSchedule >= 0 {
			when = "placed after " + secs(gs.TimeToSchedule)
		}
		p("    %-24s size %2d min %2d  bound %2d  attempts %3d  %s", gs.Name, gs.Size, gs.MinCount, gs.Bound, gs.Attempts, when)
	}
}

// SetGroup implements scheduler.Queue.
func (q coreQueue) SetGroup(name string, spec schedq.GroupSpec) error {
	err := q.c.SetGroup(name, spec, q.s.now)
	q.s.settleGroups()
	return err
}

// DeleteGroup implements scheduler.Queue.
func (q coreQueue) DeleteGroup(name string) error {
	err := q.c.DeleteGroup(name, q.s.now)
	q.s.settleGroups()
	return err
}

// compareGangs adds the gang figures to a comparison, when a run has them.
func compareGangs(row func(string, func(*Report) string), a, b *Report) {
	if a.Gangs == nil || b.Gangs == nil {
		return
	}
	n := func(f func(*GangSummary) int) func(*Report) string {
		return func(r *Report) string { return fmt.Sprint(f(r.Gangs)) }
	}
	row("gangs placed (minCount bound)", n(func(g *GangSummary) int { return g.Placed }))
	row("gangs ever partly placed", n(func(g *GangSummary) int { return g.PartlyPlaced }))
	row("gangs waiting", n(func(g *GangSummary) int { return g.Waiting }))
	row("gang time to schedule p50", func(r *Report) string { return secs(r.Gangs.TimeToSchedule.P50) })
	row("gang time to schedule max", func(r *Report) string { return secs(r.Gangs.TimeToSchedule.Max) })
	row("gang attempts max", func(r *Report) string { return fmt.Sprintf("%.0f", r.Gangs.Attempts.Max) })
	row("lone pods bound while a gang waited", n(func(g *GangSummary) int { return g.SinglesBoundWhileGangsWaited }))
}
