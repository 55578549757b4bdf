package sim

import (
	"context"
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"

	"github.com/schedq/schedq/kube/framework"
	"github.com/schedq/schedq/kube/scheduler"
)

// probeNow answers "does it fit now, and where" for a what-if of one
// plain pod with one scheduling cycle (scheduler.Probe) on r's starting
// state, which is the cluster as it is: the running pods bound, nothing
// pending placed yet. That is the answer whatIfNow's run of the pod
// alone gives, without building the cluster a third time: its first
// attempt is the same cycle (same state, same start, the same seeded
// tie-breaks, no nominations), and with no running pod ending, nothing
// changes after it. False when one cycle cannot tell: several pods or
// PodGroups, a pod that preemption could serve (a running pod of lower
// priority, or one leaving), a pod whose binding may not follow its
// cycle (gates, a PodGroup, volumes, resource claims, extended
// resources), or no framework. O(one cycle).
func (r *forecastRun) probeNow(sc *Scenario, st *ForecastState, in *WhatIfInput) ([]WhatIfPod, bool) {
	if !canProbe(sc, st, in) {
		return nil, false
	}
	p := in.Pods[0]
	out, err := r.s.sched.Probe(context.Background(), p, schedRand(sc.Seed))
	if err != nil {
		return nil, false
	}
	w := WhatIfPod{Pod: framework.Key(p)}
	if out.Result == scheduler.Scheduled {
		w.FitsNow, w.Node = true, out.Node
	} else {
		w.Reason = out.Message
	}
	return []WhatIfPod{w}, true
}

// canProbe reports whether one cycle can tell (see probeNow): one plain
// pod, which preemption could not serve. O(running pods).
func canProbe(sc *Scenario, st *ForecastState, in *WhatIfInput) bool {
	if len(in.Pods) != 1 || len(in.PodGroups) != 0 || !probeable(in.Pods[0]) {
		return false
	}
	if sc.Scheduler.Preemption != nil {
		prio := framework.Priority(in.Pods[0])
		for _, rp := range st.Running {
			if framework.Priority(rp.Pod) < prio || rp.Pod.DeletionTimestamp != nil {
				return false
			}
		}
	}
	return true
}

// schedRand is the simulator's tie-breaker for a scenario's seed, as a
// fresh run's scheduler gets it.
func schedRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x5eed)) }

// probeable reports whether a pod binds once a cycle chooses its node: no
// scheduling gates, no PodGroup, no volumes but the node's own, no
// resource claims, and requests of CPU and memory only.
func probeable(p *v1.Pod) bool {
	if len(p.Spec.SchedulingGates) > 0 || framework.GroupName(p) != "" || len(p.Spec.ResourceClaims) > 0 {
		return false
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil || v.CSI != nil {
			return false
		}
	}
	for _, cs := range [][]v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			for _, l := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name := range l {
					if name != v1.ResourceCPU && name != v1.ResourceMemory {
						return false
					}
				}
			}
		}
	}
	return true
}
