package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedq/schedq/hack/e2e/cluster"
)

// gangFlags turn PodGroups on in kube-apiserver v1.37; kube-scheduler needs
// the gate too (schedq finds PodGroups through discovery).
var (
	gangAPIServerFlags = []string{"--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"}
	gangSchedulerFlag  = "--feature-gates=GenericWorkload=true"
)

// gangSize is the member count (and minCount) of every gang.
const gangSize = 8

// gangsSupported says whether the kube-apiserver binary serves PodGroups
// v1beta1 (v1.37 or later), and if not, why.
func gangsSupported() (bool, string) {
	bin, err := cluster.FindBinary("", "kube-apiserver")
	if err != nil {
		return false, err.Error()
	}
	label := binaryLabel("kube-apiserver", bin)
	m := regexp.MustCompile(`v1\.(\d+)\.`).FindStringSubmatch(label)
	if m == nil {
		return false, "cannot read the version of " + bin
	}
	if minor, _ := strconv.Atoi(m[1]); minor < 37 {
		return false, label + " serves no PodGroups (v1.37 or later needed)"
	}
	return true, ""
}

// gangWorkload: gangs of 8 one-CPU pods (minCount 8) on 8-CPU nodes, 90%
// of the cluster's CPU asked for, all pending when the scheduler starts.
// Each gang fits only whole on a node or across nodes; a scheduler that
// places members one at a time may strand partial gangs, one that places
// them all-or-nothing binds each gang together.
func gangWorkload(scale float64) workload {
	return workload{
		name: "gang",
		prepare: func(e *env) error {
			nodes := n(100, scale)
			if err := e.addNodes("node", nodes, "8", "32Gi"); err != nil {
				return err
			}
			return e.addGangs(nodes*8*9/10/gangSize, "1")
		},
		drive: func(e *env, begin time.Time) error { e.readyAt(begin, e.pods...); return nil },
	}
}

// addGangs creates count PodGroups of gangSize (minCount gangSize) and
// their members, each asking for cpu.
func (e *env) addGangs(count int, cpu string) error {
	if e.gangs == nil {
		e.gangs = map[string][]string{}
	}
	for g := range count {
		name := fmt.Sprintf("gang-%d", g)
		pg := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: gangSize},
			}},
		}
		if _, err := e.client.SchedulingV1beta1().PodGroups(e.ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create PodGroup %s: %w", name, err)
		}
		before := len(e.pods)
		if err := e.addPods(name, gangSize, cpu, func(p *v1.Pod) {
			p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name}
		}); err != nil {
			return err
		}
		e.gangs[name] = slices.Clone(e.pods[before:])
	}
	return nil
}

// gangPercentiles is the time to bind per gang, p50 and p99: from the
// gang's readiness to its last member's binding. Gangs not fully bound
// are left out.
func (e *env) gangPercentiles() (time.Duration, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ds []time.Duration
	for _, members := range e.gangs {
		var last time.Duration
		complete := true
		for _, m := range members {
			t, bound := e.boundAt[m]
			ref, ok := e.ref[m]
			if !bound || !ok {
				complete = false
				break
			}
			last = max(last, t.Sub(ref))
		}
		if complete {
			ds = append(ds, last)
		}
	}
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}
