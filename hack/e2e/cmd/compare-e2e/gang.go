package main

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// gangFlags turn PodGroups (scheduling.k8s.io/v1beta1) on in
// kube-apiserver v1.37, as hack/e2e/gang does.
var gangFlags = []string{"--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"}

// gangSize is every gang's member count and minCount.
const gangSize = 8

// gang is one PodGroup of the gang workload, as created in one run.
type gang struct {
	name    string
	members []string
	created time.Time // just before its PodGroup was created
	late    bool      // cannot fit until the node waves
}

// gangRun is the gang workload's state in one run (runs are sequential).
type gangRun struct {
	gangs []*gang
	lone  []string
	waves []time.Time // when each wave of nodes began to be created
}

// gangWorkload mixes gangs of 8 (PodGroups with gang minCount 8, members
// of 1 cpu) with lone pods of 500m, streamed in once the scheduler has
// started, on 8-cpu nodes. Two late gangs of 5-cpu members arrive when
// the regular load is bound and no node has 5 cpu free: a wave of 12
// nodes lets one of them fit whole and the other only 4 of 8 (it must
// bind none), a second wave of 4 nodes 2 s later lets the other fit. A
// scheduler that binds a gang partly shows it as a late member bound
// before the first wave, a late gang bound on both sides of the second,
// or a spread of more than 1 s between a gang's first and last binding.
func gangWorkload(scale float64) workload {
	run := &gangRun{}
	regular, lone, nodes := n(8, scale), n(64, scale), n(16, scale)
	return workload{
		name:               "gang",
		apiServerFlags:     gangFlags,
		kubeSchedulerFlags: []string{"--feature-gates=GenericWorkload=true"},
		prepare: func(e *env) error {
			*run = gangRun{}
			return e.addNodes("node", nodes, "8", "32Gi")
		},
		drive: func(e *env, begin time.Time) error {
			return run.drive(e, regular, lone)
		},
		report: run.report,
	}
}

// drive waits for the scheduler to bind a first pod, streams the regular gangs and lone pods (one gang and its share
// of lone pods every 100 ms), waits for them to bind, then creates the
// late gangs and the two waves of nodes.
func (r *gangRun) drive(e *env, regular, lone int) error {
	// One lone pod first, so that the stream starts when the scheduler
	// binds (not while it starts up); it is in no figure but pods/s.
	warm, err := e.addPodsFrom("warmup", 0, 1, "100m", nil)
	if err != nil {
		return err
	}
	if err := e.waitBound(warm, 2*time.Minute); err != nil {
		return err
	}
	start := time.Now()
	perGang := (lone + regular - 1) / regular
	for i := range regular {
		if err := sleepUntil(start.Add(time.Duration(i) * 100 * time.Millisecond)); err != nil {
			return err
		}
		if _, err := r.addGang(e, fmt.Sprintf("gang%d", i), "1", false); err != nil {
			return err
		}
		from, to := i*perGang, min(lone, (i+1)*perGang)
		if from < to {
			t := time.Now()
			names, err := e.addPodsFrom("lone", from, to, "500m", nil)
			if err != nil {
				return err
			}
			e.readyAt(t, names...)
			r.lone = append(r.lone, names...)
		}
	}
	if err := e.waitBound(e.pods, 5*time.Minute); err != nil {
		return err
	}
	// The late gangs: 5-cpu members, which no node has room for yet.
	for i := range 2 {
		if _, err := r.addGang(e, fmt.Sprintf("late%d", i), "5", true); err != nil {
			return err
		}
	}
	// Let both schedulers try the late gangs and fail before the waves.
	waves := []struct {
		at    time.Duration
		nodes int
	}{{time.Second, 12}, {3 * time.Second, 4}}
	created := time.Now()
	for i, w := range waves {
		if err := sleepUntil(created.Add(w.at)); err != nil {
			return err
		}
		r.waves = append(r.waves, time.Now())
		if err := e.addNodes(fmt.Sprintf("wave%d", i), w.nodes, "8", "32Gi"); err != nil {
			return err
		}
	}
	return nil
}

// addGang creates a PodGroup with gang minCount gangSize, then its
// members, each asking for cpu.
func (r *gangRun) addGang(e *env, name, cpu string, late bool) (*gang, error) {
	g := &gang{name: name, created: time.Now(), late: late}
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: gangSize}
	if _, err := e.client.SchedulingV1beta1().PodGroups(e.ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("PodGroup %s (is GenericWorkload on in kube-apiserver?): %w", name, err)
	}
	names, err := e.addPodsFrom(name, 0, gangSize, cpu, func(p *v1.Pod) {
		p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &g.name}
	})
	if err != nil {
		return nil, err
	}
	g.members = names
	e.readyAt(g.created, names...)
	r.gangs = append(r.gangs, g)
	return g, nil
}

// report gives per-gang time to bind (PodGroup creation to its last
// member bound), the late gangs' time from the wave that let them fit,
// the largest spread between a gang's first and last binding, the gangs
// partly bound, and the attempts the metrics show.
func (r *gangRun) report(e *env, metrics string) report {
	var toBind, afterWave []time.Duration
	var spread time.Duration
	partly := 0
	for _, g := range r.gangs {
		ts, ok := e.bound(g.members)
		if !ok {
			partly++
			continue
		}
		first, last := ts[0], ts[0]
		for _, t := range ts {
			first, last = minTime(first, t), maxTime(last, t)
		}
		toBind = append(toBind, last.Sub(g.created))
		spread = max(spread, last.Sub(first))
		if g.late {
			afterWave = append(afterWave, last.Sub(r.lastWaveBefore(last)))
		}
		if last.Sub(first) > time.Second || (g.late && r.partlyLate(first, last)) {
			partly++
		}
	}
	p50, p99 := quantiles(toBind)
	lines := []string{
		fmt.Sprintf("%d gangs of %d + %d lone pods; gang time to bind (PodGroup created to last member bound) p50 %v, p99 %v",
			len(r.gangs), gangSize, len(r.lone), p50.Round(time.Millisecond), p99.Round(time.Millisecond)),
		fmt.Sprintf("late gangs bound %v after the wave that let each fit; largest first-to-last binding spread in a gang %v",
			roundAll(afterWave), spread.Round(time.Millisecond)),
		fmt.Sprintf("gangs ever partly bound (a member bound before its gang could fit, or >1s before its last member): %d", partly),
		fmt.Sprintf("attempts: %.0f (scheduler_schedule_attempts_total), PodGroup attempts %s",
			metricSum(metrics, "scheduler_schedule_attempts_total"),
			orNone(formatCounts(metricByLabel(metrics, "scheduler_podgroup_schedule_attempts_total", "result")))),
	}
	return report{lines: lines, signature: fmt.Sprintf("partly bound %d", partly)}
}

// lastWaveBefore returns when the last wave begun before t began.
func (r *gangRun) lastWaveBefore(t time.Time) time.Time {
	var w time.Time
	for _, at := range r.waves {
		if at.Before(t) {
			w = at
		}
	}
	return w
}

// partlyLate says whether a late gang bound from first to last was
// partly bound: a member before the first wave (no late member fits
// then), or members on both sides of the second (between the waves only
// one late gang fits whole).
func (r *gangRun) partlyLate(first, last time.Time) bool {
	if len(r.waves) < 2 {
		return false
	}
	return first.Before(r.waves[0]) || (first.Before(r.waves[1]) && !last.Before(r.waves[1]))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "not exposed"
	}
	return s
}
