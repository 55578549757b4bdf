package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bestNodeWorkload gives every pod one best node: pod-i prefers node
// best-i by a preferred node affinity of weight 100, and may run only on
// the workload's own nodes, all alike. Both schedulers should put every
// pod on its best node; the report counts those that are not, and its
// signature is the placement, so that the table says whether the two
// placed every pod alike.
func bestNodeWorkload(scale float64) workload {
	count := n(100, scale)
	return workload{
		name: "best node",
		prepare: func(e *env) error {
			if err := e.addNodes("best", count, "8", "32Gi"); err != nil {
				return err
			}
			own := append([]string(nil), e.nodes...)
			return e.addPods("pod", count, "100m", func(p *v1.Pod) {
				var i int
				fmt.Sscanf(p.Name[strings.LastIndex(p.Name, "-")+1:], "%d", &i)
				p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
						MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: own}}}}},
					PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 100, Preference: v1.NodeSelectorTerm{
						MatchExpressions: []v1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{own[i]}}}}}},
				}}
			})
		},
		drive:  func(e *env, begin time.Time) error { e.readyAt(begin, e.pods...); return nil },
		report: bestNodeReport,
	}
}

// bestNodeReport counts the pods not on their best node and lists up to
// five; the signature is every pod's node, without the namespace prefix
// that makes each scheduler's nodes its own.
func bestNodeReport(e *env, _ string) report {
	pods, err := e.client.CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return report{lines: []string{"listing pods: " + err.Error()}}
	}
	var off, place []string
	for _, p := range pods.Items {
		want := strings.Replace(p.Name, "pod-", "best-", 1)
		node := strings.TrimPrefix(p.Spec.NodeName, e.ns+"-")
		place = append(place, p.Name+"="+node)
		if node != want {
			off = append(off, fmt.Sprintf("%s on %s", p.Name, node))
		}
	}
	lines := []string{fmt.Sprintf("%d of %d pods on their best node", len(pods.Items)-len(off), len(pods.Items))}
	if len(off) > 0 {
		lines = append(lines, "not: "+strings.Join(off[:min(5, len(off))], ", "))
	}
	return report{lines: lines, signature: strings.Join(place, " ")}
}
