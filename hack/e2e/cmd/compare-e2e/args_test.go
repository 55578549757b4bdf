package main

import (
	"strings"
	"testing"
)

// flagValues maps each --name=value of args to its value.
func flagValues(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		if name, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
			m[name] = v
		}
	}
	return m
}

// Both schedulers run with the same kubeconfig, leader election and client
// rate limits, and kube-scheduler without the block profiling its default
// turns on (schedq has none).
func TestSchedulerArgsAlike(t *testing.T) {
	for _, tc := range []struct {
		name        string
		leaderElect bool
	}{
		{"leader election off", false},
		{"leader election on (-fence)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := flagValues(kubeSchedulerArgs("/k", tc.leaderElect, "127.0.0.1:1234", []string{"--feature-gates=X=true"}))
			sq := flagValues(schedqArgs("/k", tc.leaderElect, "127.0.0.1:1235"))
			for _, name := range []string{"kubeconfig", "leader-elect", "kube-api-qps", "kube-api-burst"} {
				if ks[name] == "" || ks[name] != sq[name] {
					t.Errorf("--%s: kube-scheduler %q, schedq %q; want the same", name, ks[name], sq[name])
				}
			}
			if ks["contention-profiling"] != "false" {
				t.Errorf("kube-scheduler --contention-profiling = %q, want false (block profiling at every blocking event)", ks["contention-profiling"])
			}
			if ks["secure-port"] != "1234" || ks["feature-gates"] != "X=true" {
				t.Errorf("kube-scheduler serves on %q with gates %q, want 1234 and the workload's", ks["secure-port"], ks["feature-gates"])
			}
		})
	}
}
