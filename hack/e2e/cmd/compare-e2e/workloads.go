package main

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workload prepares a namespace before the scheduler starts, then drives
// it (events over time) once the scheduler runs.
type workload struct {
	name    string
	prepare func(*env) error
	drive   func(e *env, begin time.Time) error
	// apiServerFlags are kube-apiserver flags the workload needs; the one
	// API server both schedulers share is started with those of every
	// selected workload.
	apiServerFlags []string
	// kubeSchedulerFlags are added to kube-scheduler's command line.
	kubeSchedulerFlags []string
	// report, if set, gives the workload's own figures once every pod is
	// bound, from the env and the scheduler's /metrics text.
	report func(e *env, metrics string) report
}

// report is a workload's own figures for one scheduler: lines to print,
// and a signature that should be equal for both schedulers (empty: none).
type report struct {
	lines     []string
	signature string
}

func n(base int, scale float64) int { return max(1, int(float64(base)*scale)) }

func workloads(scale float64) []workload {
	return append(basicWorkloads(scale), bestNodeWorkload(scale), gangWorkload(scale), preemptionWorkload(scale))
}

func basicWorkloads(scale float64) []workload {
	return []workload{
		{
			// All pods pending when the scheduler starts: raw throughput.
			name: "basic",
			prepare: func(e *env) error {
				if err := e.addNodes("node", n(500, scale), "8", "32Gi"); err != nil {
					return err
				}
				return e.addPods("pod", n(5000, scale), "100m", nil)
			},
			drive: func(e *env, begin time.Time) error { e.readyAt(begin, e.pods...); return nil },
		},
		{
			// Pods that fit nowhere until nodes join, three waves 2s apart.
			name: "node arrival",
			prepare: func(e *env) error {
				if err := e.addNodes("first", n(20, scale), "8", "32Gi"); err != nil {
					return err
				}
				return e.addPods("pod", n(640, scale), "1", nil)
			},
			drive: func(e *env, begin time.Time) error {
				e.readyAt(begin, e.pods...)
				for wave := range 3 {
					if err := sleepUntil(begin.Add(time.Duration(2*(wave+1)) * time.Second)); err != nil {
						return err
					}
					if err := e.addNodes("wave"+string(rune('a'+wave)), n(20, scale), "8", "32Gi"); err != nil {
						return err
					}
				}
				return nil
			},
		},
		{
			// Gated pods whose gates are lifted 10% at a time, every 500ms.
			name: "gated",
			prepare: func(e *env) error {
				if err := e.addNodes("node", n(50, scale), "16", "64Gi"); err != nil {
					return err
				}
				return e.addPods("pod", n(2000, scale), "100m", func(p *v1.Pod) {
					p.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/wait"}}
				})
			},
			drive: func(e *env, begin time.Time) error {
				step := max(1, len(e.pods)/10)
				for i := 0; i < len(e.pods); i += step {
					if err := sleepUntil(begin.Add(time.Duration(i/step+1) * 500 * time.Millisecond)); err != nil {
						return err
					}
					batch := e.pods[i:min(i+step, len(e.pods))]
					for _, name := range batch {
						p, err := e.client.CoreV1().Pods(e.ns).Get(context.Background(), name, metav1.GetOptions{})
						if err != nil {
							return err
						}
						p.Spec.SchedulingGates = nil
						// From the update's sending, as the other workloads
						// count from a pod's creation request: the scheduler
						// may bind the pod before the update's answer arrives.
						e.readyAt(time.Now(), name)
						if _, err := e.client.CoreV1().Pods(e.ns).Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
							return err
						}
					}
				}
				return nil
			},
		},
		{
			// One pod per node: required anti-affinity on the hostname.
			name: "anti-affinity",
			prepare: func(e *env) error {
				if err := e.addNodes("node", n(500, scale), "8", "32Gi"); err != nil {
					return err
				}
				return e.addPods("pod", n(400, scale), "100m", func(p *v1.Pod) {
					p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
						LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"group": "pod"}}, TopologyKey: "kubernetes.io/hostname",
					}}}}
				})
			},
			drive: func(e *env, begin time.Time) error { e.readyAt(begin, e.pods...); return nil },
		},
	}
}

// sleepUntil waits for a point of the workload's own timeline (pacing
// events, not waiting for a result).
func sleepUntil(t time.Time) error {
	time.Sleep(time.Until(t))
	return nil
}
