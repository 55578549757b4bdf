package sim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
)

// TestDRAVictimsFreeTheirDevices: with claims, a preempted pod's devices
// go back to the pool. lo holds one of the node's two GPUs and all its
// CPU; hi (priority 100) preempts it for the CPU and takes a GPU; mid,
// arriving later, needs the other GPU, which only lo's deallocation
// frees. With a grace period lo keeps its GPU while it terminates;
// recreated, it comes back with a claim of its own, which waits.
func TestDRAVictimsFreeTheirDevices(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace string
	}{
		{name: "at once", grace: "0s"},
		{name: "after a grace period", grace: "5s"},
		{name: "recreated", grace: "0s, recreateVictims: true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := parseScenario(t, `name: victims
seed: 1
duration: 2m
scheduler: {plugins: upstream, preemption: {gracePeriod: `+tc.grace+`}}
objects:`+draObjects(2, "n-0")+`
nodes: [{name: n, count: 1, capacity: {cpu: "4", memory: 32Gi}}]
pods:
  - {name: lo, count: 1, requests: {cpu: "4", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
  - {name: hi, count: 1, priority: 100, arrival: {at: 1s}, requests: {cpu: "2", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
  - {name: mid, count: 1, arrival: {at: 30s}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
`)
			s := runSim(t, sc)
			b, msg := boundAt(s), lastMessages(s)
			if b["hi-0"] < 0 || b["mid-0"] < 0 {
				t.Fatalf("bound at %v; want hi and mid bound (%v)", b, msg)
			}
			if b["mid-0"] > 31*time.Second {
				t.Errorf("mid bound at %v, want within a second of its arrival", b["mid-0"])
			}
			if want := strings.Count(tc.grace, "recreate"); s.pre.recreated != want {
				t.Errorf("%d victims recreated, want %d", s.pre.recreated, want)
			}
			if s.pre.victims != 1 {
				t.Errorf("%d victims, want lo", s.pre.victims)
			}
			checkClaimsMatchPods(t, s)
		})
	}
}

// TestDRADeletedPodWakesTheWaiting: a pod deleted with its claim
// allocated frees its device, and the pod waiting for it binds at once,
// not at the next flush.
func TestDRADeletedPodWakesTheWaiting(t *testing.T) {
	sc := parseScenario(t, `name: deleted
seed: 1
duration: 10m
scheduler: {plugins: upstream}
objects:`+draObjects(1, "n-0")+`
nodes: [{name: n, count: 1, capacity: {cpu: "8", memory: 32Gi}}]
pods:
  - {name: a, count: 1, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
  - {name: b, count: 1, arrival: {at: 1s}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
events:
  - {at: 20s, deletePods: {group: a}}
`)
	s := runSim(t, sc)
	if b := boundAt(s)["b-0"]; b < 20*time.Second || b > 21*time.Second {
		t.Errorf("b bound at %v, want within a second of a's deletion at 20s (%s)", b, lastMessages(s)["b-0"])
	}
	checkClaimsMatchPods(t, s)
}

// TestDRAGangsAllOrNothing: gangs of two pods of one GPU each on a node
// of three GPUs. g0 fits whole; g1 finds one GPU for two members and
// waits whole (the run fails if a gang is ever partly placed), and what
// it tried leaves no device taken: the lone pod, arriving later, gets
// the third GPU at once. When g0's pods end, g1 fits.
func TestDRAGangsAllOrNothing(t *testing.T) {
	sc := parseScenario(t, `name: gangs
seed: 1
duration: 10m
scheduler: {plugins: upstream}
objects:`+draObjects(3, "n-0")+`
nodes: [{name: n, count: 1, capacity: {cpu: "16", memory: 32Gi}}]
pods:
  - {name: g, count: 4, gang: {size: 2}, lifetime: {mean: 2m}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
  - {name: lone, count: 1, arrival: {at: 30s}, requests: {cpu: "1", memory: 1Gi}, resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]}
`)
	s := runSim(t, sc)
	b, msg := boundAt(s), lastMessages(s)
	if b["lone-0"] < 30*time.Second || b["lone-0"] > 31*time.Second {
		t.Errorf("lone bound at %v, want within a second of its arrival (%s)", b["lone-0"], msg["lone-0"])
	}
	if b["g-0"] < 0 || b["g-1"] < 0 || b["g-0"] > time.Second {
		t.Errorf("g0 bound at %v and %v, want at once", b["g-0"], b["g-1"])
	}
	if gs := s.x.gangs.byName["default/g-g1"]; gs == nil || gs.attempts < 2 {
		t.Errorf("g1: %+v; want it tried while g0 ran", gs)
	}
	if b["g-2"] < 0 || b["g-3"] < 0 {
		t.Errorf("g1 bound at %v and %v, want bound once g0 ends (%v)", b["g-2"], b["g-3"], msg)
	}
	checkClaimsMatchPods(t, s)
}

// auditTrace is a few GPU nodes of two models and pods of shares and
// whole GPUs that arrive and end over ten minutes.
func auditTrace(t *testing.T) string {
	return writeTrace(t, "sn,cpu_milli,memory_mib,gpu,model\nv0,32000,131072,4,V100\nv1,32000,131072,2,V100\nt0,16000,65536,2,T4\nc0,16000,65536,0,\n", timedHeader+
		"s1,1000,1024,1,300,,LS,Running,0,400,0\n"+
		"s2,1000,1024,1,600,V100,LS,Running,5,300,5\n"+
		"w1,4000,4096,2,1000,,LS,Running,10,200,10\n"+
		"s3,2000,2048,1,500,,LS,Running,20,500,20\n"+
		"w2,2000,2048,1,1000,T4,LS,Running,30,450,30\n"+
		"s4,1000,1024,1,200,,LS,Running,40,250,40\n"+
		"w3,8000,8192,4,1000,V100,LS,Running,50,600,50\n"+
		"cpu,4000,4096,0,0,,BE,Running,60,300,60\n"+
		"s5,1000,1024,1,700,,LS,Running,210,560,210\n"+
		"w4,2000,2048,2,1000,,LS,Running,260,590,260\n"+
		"s6,1000,1024,1,400,,LS,Running,310,580,310\n")
}

// TestDRAReportAgreesWithTheDeviceModel: on the same small trace and
// policy, the report's GPU allocation and fragmentation with DRA are the
// device model's, sample by sample, and so are the placements.
func TestDRAReportAgreesWithTheDeviceModel(t *testing.T) {
	dir := auditTrace(t)
	for _, policy := range []string{"bestfit", "gpupacking", "fgd"} {
		t.Run(policy, func(t *testing.T) {
			of := func(model string) ([]string, []string) {
				sc := traceScenario(dir)
				sc.Scheduler.GPUModel, sc.Scheduler.GPUPolicy = model, policy
				r, err := Run(sc, Options{CheckInvariants: true})
				if err != nil {
					t.Fatal(err)
				}
				var alloc, places []string
				for _, a := range r.Alloc {
					alloc = append(alloc, fmt.Sprintf("%v gpu %.4f frag %.4f ratio %.4f", a.T, a.GPU, a.Frag, a.FragRatio))
				}
				for _, rec := range r.Records {
					places = append(places, fmt.Sprintf("%s %s %v", rec.Name, rec.Node, rec.BoundAt))
				}
				return alloc, places
			}
			da, dp := of(GPUModelDRA)
			if len(da) < 5 || len(dp) != 11 {
				t.Fatalf("%d samples, %d records: the case measures nothing", len(da), len(dp))
			}
			va, vp := of(GPUModelDevice)
			if strings.Join(dp, "\n") != strings.Join(vp, "\n") {
				t.Errorf("placements:\ndra:\n%s\ndevice:\n%s", strings.Join(dp, "\n"), strings.Join(vp, "\n"))
			}
			if strings.Join(da, "\n") != strings.Join(va, "\n") {
				t.Errorf("allocation:\ndra:\n%s\ndevice:\n%s", strings.Join(da, "\n"), strings.Join(va, "\n"))
			}
		})
	}
}

// TestDRASameBytesUnderFGD: a small trace with DRA under FGD, run twice,
// prints the same bytes.
func TestDRASameBytesUnderFGD(t *testing.T) {
	dir := auditTrace(t)
	sc := func() *Scenario {
		s := traceScenario(dir)
		s.Scheduler.GPUPolicy = "fgd"
		return s
	}
	first := outputBytes(t, sc, "gpuPolicy", "bestfit")
	second := outputBytes(t, sc, "gpuPolicy", "bestfit")
	for _, name := range sortedKeys(first) {
		if string(first[name]) != string(second[name]) {
			t.Errorf("%s differs between two runs", name)
		}
	}
}

// TestDRAForkLeavesTheReplayAlone: a forecast and a what-if forked from
// a DRA replay allocate devices in their own runs: the replay, run on to
// its end afterwards, binds every pod where and when the same replay
// without the forks does, and its claims are the same.
func TestDRAForkLeavesTheReplayAlone(t *testing.T) {
	dir := auditTrace(t)
	whatIf := "apiVersion: v1\nkind: Pod\nmetadata: {name: extra}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {cpu: \"1\", memory: 1Gi, alibaba.com/gpu-milli: \"1000\"}\n"
	replay := func(fork bool) string {
		sc := traceScenario(dir)
		sc.Scheduler.GPUPolicy = "fgd"
		r := replayTo(t, sc, 55*time.Second)
		if fork {
			st := r.State()
			if len(st.Pending) == 0 || len(st.Running) < 3 {
				t.Fatalf("at 55s: %d running, %d pending; the case forks nothing", len(st.Running), len(st.Pending))
			}
			if _, err := RunForecast(sc, st, ForecastOptions{Horizon: time.Hour, Known: r.Known}); err != nil {
				t.Fatal(err)
			}
			in, err := ParseWhatIf([]byte(whatIf))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := RunWhatIf(sc, st, in, ForecastOptions{Horizon: time.Hour, Known: r.Known}); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Until(20 * time.Minute); err != nil {
			t.Fatal(err)
		}
		if len(r.s.order) != 11 {
			t.Fatalf("%d pods arrived, want the trace's 11", len(r.s.order))
		}
		var out []string
		for _, st := range r.s.order {
			out = append(out, fmt.Sprintf("%s %s %v", st.key.Name, st.ext.node, st.bound.Sub(epoch)))
		}
		for _, k := range sortedKeys(r.s.obj.byKey) {
			c, ok := r.s.obj.byKey[k].(*resourceapi.ResourceClaim)
			if !ok {
				continue
			}
			line := c.Name
			if a := c.Status.Allocation; a != nil {
				for _, d := range a.Devices.Results {
					line += fmt.Sprintf(" %s/%s %v", d.Pool, d.Device, d.ConsumedCapacity)
				}
			}
			for _, rf := range c.Status.ReservedFor {
				line += " for " + rf.Name
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	if a, b := replay(false), replay(true); a != b {
		t.Errorf("the replay without forks:\n%s\nwith:\n%s", a, b)
	}
}
