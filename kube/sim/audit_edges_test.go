package sim

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// edgeReport runs a scenario checked (Options.CheckInvariants: the queue's
// checker and the node check) and checks what holds for every run: no pod
// pending without a reason the queue gives, the ends adding up to the
// scheduled pods, and each preemption victim ended as preempted.
func edgeReport(t *testing.T, y string) *Report {
	t.Helper()
	r, err := Run(parse(t, y), Options{CheckInvariants: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range r.PendingReasons {
		if strings.Contains(c.Label, "unknown to the queue") {
			t.Errorf("%d pods pending unknown to the queue", c.Count)
		}
	}
	if got := r.Finished + r.DeletedBound + r.Preempted + r.Running; got != r.Scheduled {
		t.Errorf("ends %d (finished %d, deleted %d, preempted %d, running %d) != scheduled %d",
			got, r.Finished, r.DeletedBound, r.Preempted, r.Running, r.Scheduled)
	}
	if r.Scheduled+r.Pending+r.Withdrawn != r.Pods {
		t.Errorf("scheduled %d + pending %d + withdrawn %d != pods %d", r.Scheduled, r.Pending, r.Withdrawn, r.Pods)
	}
	hist, pending := 0, 0
	for _, c := range r.AttemptsPerPod {
		hist += c.Count
	}
	for _, c := range r.PendingReasons {
		pending += c.Count
	}
	if hist != r.Pods || pending != r.Pending {
		t.Errorf("attempts histogram %d pods, pending reasons %d pods; pods %d, pending %d", hist, pending, r.Pods, r.Pending)
	}
	if r.Attempts > r.PodAttempts || r.WastedAttempts > r.PodAttempts {
		t.Errorf("attempts %d, pod attempts %d, wasted %d", r.Attempts, r.PodAttempts, r.WastedAttempts)
	}
	if x := r.Preemption; x != nil && x.Victims != r.Preempted {
		t.Errorf("%d victims but %d pods ended preempted", x.Victims, r.Preempted)
	}
	return r
}

// TestEdgeScenarios probes the simulator's handling of preemption, gangs
// and node events at their edges.
func TestEdgeScenarios(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		check func(t *testing.T, r *Report)
	}{
		{
			// Two low pods are evicted with a 30 s grace; their node is
			// removed while they terminate. Recreated, they must be
			// pending pods the queue knows, not terminating copies.
			name: "terminating victims on a removed node are recreated pending",
			yaml: `
name: edge
duration: 2m
scheduler:
  preemption: {recreateVictims: true, gracePeriod: 30s}
nodes:
  - {name: n, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: low, count: 2, requests: {cpu: "1"}, priority: 0}
  - {name: high, count: 1, requests: {cpu: "2"}, priority: 100, arrival: {at: 5s}}
events:
  - {at: 10s, removeNodes: {group: n}}
  - {at: 20s, addNodes: {name: m, count: 1, capacity: {cpu: "4", memory: 4Gi, pods: "10"}}}
`,
			check: func(t *testing.T, r *Report) {
				if r.Pods != 5 || r.Scheduled != 5 || r.Pending != 0 {
					t.Errorf("pods %d, scheduled %d, pending %d %+v", r.Pods, r.Scheduled, r.Pending, r.PendingReasons)
				}
			},
		},
		{
			// The victims' lifetimes end (at 10 s) during their 30 s grace:
			// they leave then, as victims.
			name: "a victim whose lifetime ends in its grace period ends preempted",
			yaml: `
name: edge
duration: 2m
scheduler:
  preemption: {gracePeriod: 30s}
nodes:
  - {name: n, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: low, count: 2, requests: {cpu: "1"}, priority: 0, lifetime: {mean: 10s}}
  - {name: high, count: 1, requests: {cpu: "2"}, priority: 100, arrival: {at: 5s}}
`,
			check: func(t *testing.T, r *Report) {
				if r.Preempted != 2 || r.Finished != 0 || r.Scheduled != 3 {
					t.Errorf("preempted %d, finished %d, scheduled %d", r.Preempted, r.Finished, r.Scheduled)
				}
				// The preemptor waits for its victims to leave at 10 s.
				if r.TimeToSchedule.Max < 5 {
					t.Errorf("time to schedule max %.3fs: bound before its victims left", r.TimeToSchedule.Max)
				}
			},
		},
		{
			// A placed gang loses 2 members with their node; recreated,
			// they are bound on a new node: the gang counts 4 bound, not 6.
			name: "a gang's members recreated after node removal are not counted twice",
			yaml: `
name: edge
duration: 2m
nodes:
  - {name: a, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
  - {name: b, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: g, count: 4, requests: {cpu: "1"}, gang: {size: 4}}
events:
  - {at: 10s, removeNodes: {group: b}}
  - {at: 30s, addNodes: {name: c, count: 1, capacity: {cpu: "4", memory: 4Gi, pods: "10"}}}
`,
			check: func(t *testing.T, r *Report) {
				g := r.Gangs
				if g == nil || g.Placed != 1 || len(g.PerGang) != 1 || g.PerGang[0].Bound != 4 {
					t.Fatalf("gangs %+v", g)
				}
				// Between 10 s and 30 s it had 2 of minCount 4 bound.
				if g.PartlyPlaced != 1 {
					t.Errorf("partly placed %d, want 1", g.PartlyPlaced)
				}
			},
		},
		{
			// A higher-priority pod preempts one member of a placed gang:
			// the gang is left 3 of minCount 4 bound (the simulator does not
			// release gangs), with its recreated member pending. The
			// report says so; the run does not fail, since the scheduler
			// placed the gang whole.
			name: "a placed gang that loses a member to preemption is reported partly placed",
			yaml: `
name: edge
duration: 2m
scheduler:
  preemption: {recreateVictims: true}
nodes:
  - {name: a, count: 2, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: g, count: 4, requests: {cpu: "1"}, gang: {size: 4}}
  - {name: high, count: 1, requests: {cpu: "1"}, priority: 100, arrival: {at: 5s}}
`,
			check: func(t *testing.T, r *Report) {
				g := r.Gangs
				if g == nil || g.Placed != 1 || g.PartlyPlaced != 1 || g.PerGang[0].Bound != 3 {
					t.Fatalf("gangs %+v", g)
				}
				if r.Pending != 1 || len(r.PendingReasons) != 1 || !strings.Contains(r.PendingReasons[0].Label, "3 bound before") {
					t.Errorf("pending %d %+v", r.Pending, r.PendingReasons)
				}
			},
		},
		{
			// One of the two victims is deleted (a deletePods event) after
			// the preemptor chose it and before the eviction reached it: it
			// was never evicted, and is no victim.
			name: "a victim deleted before its eviction is not counted a victim",
			yaml: `
name: edge
duration: 2m
scheduler:
  preemption: {recreateVictims: true}
nodes:
  - {name: n, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: low, count: 2, requests: {cpu: "1"}, priority: 0}
  - {name: high, count: 1, requests: {cpu: "2"}, priority: 100, arrival: {at: 5s}}
events:
  - {at: 5010ms, deletePods: {group: low, count: 1}}
`,
			check: func(t *testing.T, r *Report) {
				x := r.Preemption
				if x == nil || x.Preemptions != 1 || x.Victims != 1 || x.Recreated != 1 || r.DeletedBound != 1 {
					t.Errorf("preemption %+v, deleted after binding %d", x, r.DeletedBound)
				}
			},
		},
		{
			// high evicts one low pod of 2 cpu for its 1, and the victim
			// terminates for 10 s. mid, of no higher priority than anything
			// bound, fits nowhere meanwhile; the scheduler nominates it to
			// the cpu being freed beyond high's, evicting no one: that is
			// no preemption.
			name: "a nomination to room already being freed is not a preemption",
			yaml: `
name: edge
duration: 2m
scheduler:
  preemption: {gracePeriod: 10s}
nodes:
  - {name: n, count: 1, capacity: {cpu: "4", memory: 4Gi, pods: "10"}}
pods:
  - {name: low, count: 2, requests: {cpu: "2"}, priority: 0}
  - {name: high, count: 1, requests: {cpu: "1"}, priority: 100, arrival: {at: 5s}}
  - {name: mid, count: 1, requests: {cpu: "1"}, priority: 0, arrival: {at: 6s}}
`,
			check: func(t *testing.T, r *Report) {
				x := r.Preemption
				if x == nil || x.Preemptions != 1 || x.Victims != 1 || r.Scheduled != 4 {
					t.Fatalf("preemption %+v", x)
				}
				for _, c := range x.ByPriority {
					if c.Priority == 0 && c.Preemptors != 0 {
						t.Errorf("priority 0 counts %d preemptors: it evicted no one", c.Preemptors)
					}
				}
			},
		},
		{
			// A gang's members finish their work one by one (lifetimes of
			// 10 to 60 s): a gang ending is not a gang partly placed.
			name: "a gang whose members finish one by one is not partly placed",
			yaml: `
name: edge
duration: 5m
nodes:
  - {name: a, count: 2, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: g, count: 4, requests: {cpu: "1"}, gang: {size: 4}, lifetime: {distribution: uniform, min: 10s, max: 60s}}
`,
			check: func(t *testing.T, r *Report) {
				g := r.Gangs
				if g == nil || g.Placed != 1 || g.PartlyPlaced != 0 || g.PerGang[0].Bound != 0 || r.Finished != 4 {
					t.Fatalf("gangs %+v, finished %d", g, r.Finished)
				}
			},
		},
		{
			// Gangs, lone pods and preemption from three namespaces under
			// fairness, while nodes are removed, cordoned and added.
			name: "churn with gangs, preemption and fairness",
			yaml: mixedEdges,
			check: func(t *testing.T, r *Report) {
				if r.Preemption == nil || r.Preemption.Victims == 0 || r.Gangs == nil || r.Gangs.Placed == 0 {
					t.Fatalf("preemption %+v, gangs %+v", r.Preemption, r.Gangs)
				}
			},
		},
		{
			// Node b is removed while the gang's four bindings (1 s each)
			// are under way: the two members bound to b fail. The gang is
			// left 2 of minCount 4 bound until its failed members are
			// retried, as documented (docs/gangs.md), and bound on c.
			name: "a gang whose bindings fail with their node is completed later",
			yaml: `
name: edge
duration: 2m
scheduler:
  bindLatency: 1s
nodes:
  - {name: a, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
  - {name: b, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: g, count: 4, requests: {cpu: "1"}, gang: {size: 4}}
events:
  - {at: 500ms, removeNodes: {group: b}}
  - {at: 30s, addNodes: {name: c, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}}
`,
			check: func(t *testing.T, r *Report) {
				g := r.Gangs
				if g == nil || g.Placed != 1 || g.PartlyPlaced != 1 || g.PerGang[0].Bound != 4 || r.Scheduled != 4 {
					t.Fatalf("scheduled %d, gangs %+v", r.Scheduled, g)
				}
				if g.TimeToSchedule.Max < 30 {
					t.Errorf("placed after %.3fs, before node c came", g.TimeToSchedule.Max)
				}
			},
		},
		{
			// high evicts one low pod, which terminates for 30 s; a
			// deletePods of (up to) two low pods at 10 s deletes the running
			// one only, not the victim already leaving, which ends
			// preempted.
			name: "deletePods takes running pods, not terminating victims",
			yaml: `
name: edge
duration: 2m
scheduler:
  preemption: {gracePeriod: 30s}
nodes:
  - {name: n, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "10"}}
pods:
  - {name: low, count: 2, requests: {cpu: "1"}, priority: 0}
  - {name: high, count: 1, requests: {cpu: "1"}, priority: 100, arrival: {at: 5s}}
events:
  - {at: 10s, deletePods: {group: low, count: 2}}
`,
			check: func(t *testing.T, r *Report) {
				if r.Preempted != 1 || r.DeletedBound != 1 || r.Scheduled != 3 {
					t.Errorf("preempted %d, deleted %d, scheduled %d", r.Preempted, r.DeletedBound, r.Scheduled)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, edgeReport(t, tc.yaml)) })
	}
}

const mixedEdges = `
name: edge
seed: 7
duration: 5m
scheduler:
  preemption: {recreateVictims: true, gracePeriod: 5s}
queue:
  fairness: true
nodes:
  - {name: a, count: 4, capacity: {cpu: "4", memory: 16Gi, pods: "20"}}
  - {name: b, count: 2, capacity: {cpu: "4", memory: 16Gi, pods: "20"}}
pods:
  - {name: g, namespace: t1, count: 12, requests: {cpu: "1"}, gang: {size: 4, minCount: 3}, arrival: {rate: 5}, lifetime: {distribution: exponential, mean: 40s}}
  - {name: lone, namespace: t2, count: 30, requests: {cpu: "500m"}, arrival: {rate: 10}, lifetime: {distribution: uniform, min: 5s, max: 60s}}
  - {name: high, namespace: t3, count: 6, requests: {cpu: "2"}, priority: 100, arrival: {at: 10s, rate: 1}}
events:
  - {at: 12s, removeNodes: {group: b, count: 1}}
  - {at: 15s, taintNodes: {group: a, count: 1, taint: {key: cordon}}}
  - {at: 40s, addNodes: {name: c, count: 2, capacity: {cpu: "4", memory: 16Gi, pods: "20"}}}
  - {at: 60s, untaintNodes: {group: a, taint: {key: cordon}}}
`

// TestEdgeScenariosSameBytes: the same scenario and seed give the same
// text and JSON, run twice with one processor and twice with two.
func TestEdgeScenariosSameBytes(t *testing.T) {
	var ref string
	for _, tc := range []struct {
		name  string
		procs int
	}{{"one processor", 1}, {"two processors", 2}} {
		prev := runtime.GOMAXPROCS(tc.procs)
		for i := range 2 {
			r, err := Run(parse(t, mixedEdges), Options{})
			if err != nil {
				t.Fatal(err)
			}
			r.Wall = nil
			j, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got := text(r) + string(j)
			if ref == "" {
				ref = got
			} else if got != ref {
				t.Errorf("%s, run %d: the bytes differ from the first run's", tc.name, i+1)
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}
