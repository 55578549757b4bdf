package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// lowPriorities are the classes of the pods that fill the nodes, given
// round-robin; highPriority is the preemptors'.
var lowPriorities = []int32{100, 200, 300, 400}

const highPriority = 1000

// preemptRun is the preemption workload's state in one run.
type preemptRun struct {
	low, high []string
}

// preemptionWorkload fills 4-cpu nodes with 1-cpu pods of four low
// priorities (each terminates at once when deleted: there is no kubelet),
// then, once all are bound, creates high-priority pods of 2 cpu, one per
// two nodes, which fit only by preempting. It reports the victims per
// preemptor and their priorities (which should be the same for both
// schedulers); the table's time to bind is the preemptors'.
func preemptionWorkload(scale float64) workload {
	run := &preemptRun{}
	nodes := n(10, scale)
	return workload{
		name: "preemption",
		prepare: func(e *env) error {
			*run = preemptRun{}
			if err := priorityClasses(e); err != nil {
				return err
			}
			if err := e.addNodes("node", nodes, "4", "16Gi"); err != nil {
				return err
			}
			names, err := e.addPodsFrom("low", 0, 4*nodes, "1", func(p *v1.Pod) {
				i, _ := strconv.Atoi(p.Name[len("low-"):])
				p.Spec.PriorityClassName = priorityClassName(lowPriorities[i%len(lowPriorities)])
				zero := int64(0)
				p.Spec.TerminationGracePeriodSeconds = &zero
			})
			run.low = names
			return err
		},
		drive: func(e *env, begin time.Time) error {
			if err := e.waitBound(run.low, 5*time.Minute); err != nil {
				return err
			}
			t := time.Now()
			names, err := e.addPodsFrom("high", 0, max(1, nodes/2), "2", func(p *v1.Pod) {
				p.Spec.PriorityClassName = priorityClassName(highPriority)
			})
			e.readyAt(t, names...)
			run.high = names
			return err
		},
		report: run.report,
	}
}

func priorityClassName(value int32) string { return fmt.Sprintf("compare-e2e-%d", value) }

// priorityClasses creates the workload's priority classes (shared by the
// runs of both schedulers; an existing one is kept).
func priorityClasses(e *env) error {
	for _, v := range append(append([]int32(nil), lowPriorities...), highPriority) {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityClassName(v)}, Value: v}
		_, err := e.client.SchedulingV1().PriorityClasses().Create(context.Background(), pc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// report counts the victims (low pods seen terminating or deleted) by
// priority, and reads the preemption metrics. The signature is the count
// of victims by priority.
func (r *preemptRun) report(e *env, metrics string) report {
	byPriority := map[string]float64{}
	victims := 0
	e.mu.Lock()
	for _, name := range r.low {
		p, ok := e.gone[name]
		if !ok {
			continue
		}
		victims++
		prio := "unset"
		if p.Spec.Priority != nil {
			prio = fmt.Sprint(*p.Spec.Priority)
		}
		byPriority["priority "+prio]++
	}
	e.mu.Unlock()
	per := float64(victims) / float64(max(1, len(r.high)))
	lines := []string{
		fmt.Sprintf("%d preemptors (2 cpu, priority %d) on %d full nodes of %d low pods: %d victims, %.2f per preemptor",
			len(r.high), highPriority, len(e.nodes), len(r.low), victims, per),
		fmt.Sprintf("victims by priority: %s", orNone(formatCounts(byPriority))),
		fmt.Sprintf("preemption attempts: %s (scheduler_preemption_attempts_total)", metricOrNone(metrics, "scheduler_preemption_attempts_total")),
	}
	return report{lines: lines, signature: formatCounts(byPriority)}
}
