package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func traceScenario(dir string) *Scenario {
	return &Scenario{Name: "trace", Seed: 1, Trace: &TraceSpec{Format: TraceAlibabaGPU, Dir: dir}}
}

// The fixture's seven pods: shared GPUs pack two to a GPU, gpu_spec picks
// the model, a pod larger than any node never binds and is deleted at its
// deletion time, and freed GPUs let the waiting pods in.
func TestAlibabaTraceFixture(t *testing.T) {
	r := run(t, traceScenario("testdata/alibaba"))
	pr := r.Production
	if pr == nil || pr.Pods != 7 || pr.Scheduled != 6 || pr.Never != 1 {
		t.Fatalf("production %+v, want 7 pods, 6 scheduled, 1 never", pr)
	}
	if pr.Delay.P50 != 4 || pr.Delay.P90 != 950 || pr.Delay.Max != 950 {
		t.Fatalf("production delays %+v, want p50 4s, p90 and max 950s", pr.Delay)
	}
	// (500·990 + 500·988 + 1000·476 + 2000·1000 + 1000·190) / 3600 s / 3000.
	if want := 3655000.0 / 3600 / 3000; pr.MeanGPU < want-1e-9 || pr.MeanGPU > want+1e-9 || pr.PeakGPU < 2.0/3-1e-9 || pr.PeakGPU > 2.0/3+1e-9 {
		t.Fatalf("production gpu mean %v peak %v, want %v and 2/3", pr.MeanGPU, pr.PeakGPU, want)
	}
	if r.Scheduled != 6 || r.Withdrawn != 1 || r.Finished != 6 || r.Pending != 0 {
		t.Fatalf("scheduled %d, withdrawn %d, finished %d, pending %d", r.Scheduled, r.Withdrawn, r.Finished, r.Pending)
	}
	byName := map[string]PodRecord{}
	for _, rec := range r.Records {
		byName[rec.Name] = rec
	}
	for name, node := range map[string]string{"pod-share-a": "node-t4", "pod-share-b": "node-t4", "pod-v100": "node-v100", "pod-two": "node-t4", "pod-late": "node-v100"} {
		if got := byName[name].Node; got != node {
			t.Errorf("%s on %q, want %s", name, got, node)
		}
	}
	if b := byName["pod-two"].BoundAt; b < 1000 || b > 1001 {
		t.Errorf("pod-two bound at %vs, want once the shared pods end at 1000s", b)
	}
	if b, e := byName["pod-late"].BoundAt, byName["pod-late"].EndedAt; b < 500 || b > 501 || e-b != 640 {
		t.Errorf("pod-late bound at %vs and ended at %vs, want bound when pod-v100 ends (500s) and a lifetime of 640s", b, e)
	}
	if e := byName["pod-eight"]; e.Bound || e.End != endWithdrawn || e.EndedAt != 3600 {
		t.Errorf("pod-eight %+v, want never bound, withdrawn at 3600s", e)
	}
	if a := r.Allocation; !a.HasGPU || a.PeakGPU != 1 {
		t.Errorf("simulated allocation %+v, want a gpu peak of 1", a)
	}
	out := text(r)
	for _, want := range []string{"trace alibaba-gpu-v2023", "never scheduled          1          1", "gpu allocated mean       55.6%      33.8%"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// Malformed files are refused with the file, the line and the problem.
func TestAlibabaTraceMalformed(t *testing.T) {
	nodes, _ := os.ReadFile("testdata/alibaba/openb_node_list_all_node.csv")
	pods, _ := os.ReadFile("testdata/alibaba/openb_pod_list_default.csv")
	podHeader := strings.Join(podColumns, ",") + "\n"
	for _, c := range []struct {
		name, nodes, pods, want string
	}{
		{"empty node list", "", string(pods), "openb_node_list_all_node.csv: empty file"},
		{"wrong header", "sn,cpu,memory_mib,gpu,model\n", string(pods), "openb_node_list_all_node.csv:1: header is"},
		{"no nodes", "sn,cpu_milli,memory_mib,gpu,model\n", string(pods), "openb_node_list_all_node.csv: no nodes"},
		{"missing column", string(nodes) + "node-x,1000,1024,0\n", string(pods), "openb_node_list_all_node.csv:5: 4 fields, want 5: sn,cpu_milli,memory_mib,gpu,model"},
		{"not a number", string(nodes) + "node-x,lots,1024,0,\n", string(pods), `openb_node_list_all_node.csv:5: column cpu_milli: "lots" is not an integer`},
		{"too many gpus", string(nodes) + "node-x,1000,1024,65,\n", string(pods), "openb_node_list_all_node.csv:5: column gpu"},
		{"duplicate node", string(nodes) + "node-cpu,1000,1024,0,\n", string(pods), `openb_node_list_all_node.csv:5: duplicate node "node-cpu"`},
		{"bad model", string(nodes) + "node-x,1000,1024,1,a b\n", string(pods), "column model"},
		{"empty pod list", string(nodes), "", "openb_pod_list_default.csv: empty file"},
		{"no pods", string(nodes), podHeader, "openb_pod_list_default.csv: no pods"},
		{"deleted before created", string(nodes), podHeader + "p,1000,1024,0,0,,LS,Running,50,10,\n", `openb_pod_list_default.csv:2: column deletion_time: "10" is not an integer from 50`},
		{"scheduled after deleted", string(nodes), podHeader + "p,1000,1024,0,0,,LS,Running,5,10,11\n", "openb_pod_list_default.csv:2: column scheduled_time"},
		{"share over 1000", string(nodes), podHeader + "p,1000,1024,1,1200,,LS,Running,5,10,\n", "column gpu_milli"},
		{"share without gpu", string(nodes), podHeader + "p,1000,1024,0,500,,LS,Running,5,10,\n", "columns num_gpu and gpu_milli"},
		{"bad spec", string(nodes), podHeader + "p,1000,1024,1,500,T4||,LS,Running,5,10,\n", "column gpu_spec"},
		{"memory too large for bytes", string(nodes) + "node-x,1000,8796093022208,0,\n", string(pods), `openb_node_list_all_node.csv:5: column memory_mib: "8796093022208" is not an integer from 0 to 8796093022207`},
		{"pod memory too large for bytes", string(nodes), podHeader + "p,1000,99999999999999,0,0,,LS,Running,5,10,\n", `openb_pod_list_default.csv:2: column memory_mib: "99999999999999" is not an integer from 0 to 8796093022207`},
		{"deleted after the longest run", string(nodes), podHeader + "p,1000,1024,0,0,,LS,Running,0,10000000000,\n", `openb_pod_list_default.csv:2: column deletion_time: "10000000000" is not an integer from 0 to 9223372036`},
		{"created after the longest run", string(nodes), podHeader + "p,1000,1024,0,0,,LS,Running,10000000000,10000000001,\n", `openb_pod_list_default.csv:2: column creation_time: "10000000000" is not an integer from 0 to 9223372036`},
		{"bad quote", string(nodes), podHeader + "p,1000,1024,1,500,\"T4,LS,Running,5,10,\n", "openb_pod_list_default.csv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), []byte(c.nodes), 0o644)
			os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(c.pods), 0o644)
			_, err := Run(traceScenario(dir), Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "trace alibaba-gpu-v2023: "+dir) {
				t.Fatalf("error %q does not name the trace and the file", err)
			}
		})
	}
	t.Run("over-large file", func(t *testing.T) {
		defer func(n int64) { maxTraceFileBytes = n }(maxTraceFileBytes)
		maxTraceFileBytes = 100
		_, err := Run(traceScenario("testdata/alibaba"), Options{})
		if err == nil || !strings.Contains(err.Error(), "more than the limit of 100") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := Run(traceScenario("testdata/nothing-here"), Options{})
		if err == nil || !strings.Contains(err.Error(), "testdata/nothing-here/openb_node_list_all_node.csv") {
			t.Fatalf("error %v", err)
		}
	})
}

// TestAlibabaTraceBOMAndCRLF: a trace saved with a byte-order mark and
// CRLF line ends, as a spreadsheet saves CSV, replays as the fixture does.
func TestAlibabaTraceBOMAndCRLF(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"openb_node_list_all_node.csv", "openb_pod_list_default.csv"} {
		data, err := os.ReadFile(filepath.Join("testdata/alibaba", name))
		if err != nil {
			t.Fatal(err)
		}
		data = append([]byte("\ufeff"), strings.ReplaceAll(string(data), "\n", "\r\n")...)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := text(run(t, traceScenario("testdata/alibaba")))
	sc := traceScenario(dir)
	r, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(r); got != want {
		t.Fatalf("report differs from the fixture's:\n%s\nwant:\n%s", got, want)
	}
}

// The trace composes with a scenario: its queue settings apply.
func TestAlibabaTraceWithScenario(t *testing.T) {
	sc := parse(t, `
name: traced
queue: {queueingHints: false}
trace: {format: alibaba-gpu-v2023, dir: testdata/alibaba}
`)
	r := run(t, sc)
	if r.Settings.QueueingHints || r.Production == nil || r.Pods != 7 {
		t.Fatalf("hints %v, production %v, pods %d", r.Settings.QueueingHints, r.Production, r.Pods)
	}
	if _, err := Parse([]byte("name: x\ntrace: {format: google, dir: d}\n")); err == nil || !strings.Contains(err.Error(), `trace.format: "google" is not a known trace format`) {
		t.Fatalf("unknown format: %v", err)
	}
}

// Speed brings arrivals closer and keeps lifetimes.
func TestAlibabaTraceSpeed(t *testing.T) {
	sc := traceScenario("testdata/alibaba")
	sc.Trace.Speed = 10
	r := run(t, sc)
	for _, rec := range r.Records {
		switch rec.Name {
		case "pod-late":
			if rec.Created != 6 || (rec.End == endFinished && rec.EndedAt-rec.BoundAt != 640) {
				t.Errorf("pod-late %+v, want created at 6s and a lifetime of 640s", rec)
			}
		case "pod-eight":
			if rec.End != endWithdrawn || rec.EndedAt != 3+3570 {
				t.Errorf("pod-eight %+v, want withdrawn 3570s after its arrival at 3s", rec)
			}
		}
	}
	if _, err := Parse([]byte("name: x\ntrace: {format: alibaba-gpu-v2023, dir: d, speed: -1}\n")); err == nil || !strings.Contains(err.Error(), "trace.speed") {
		t.Fatalf("negative speed: %v", err)
	}
	t.Run("slowed past the longest run", func(t *testing.T) {
		dir := t.TempDir()
		nodes, _ := os.ReadFile("testdata/alibaba/openb_node_list_all_node.csv")
		os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), nodes, 0o644)
		os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(strings.Join(podColumns, ",")+"\np,1000,1024,0,0,,LS,Running,0,10,\nq,1000,1024,0,0,,LS,Running,9000000000,9000000001,\n"), 0o644)
		sc := traceScenario(dir)
		sc.Trace.Speed = 0.5
		_, err := Run(sc, Options{})
		if err == nil || !strings.Contains(err.Error(), "openb_pod_list_default.csv:3: at speed 0.5 the pod ends after the longest virtual time") {
			t.Fatalf("error %v, want the pod's line and the speed", err)
		}
	})
}

// Idle virtual time costs nothing: 100 days between two pods take a
// handful of steps, not one per second or per flush interval.
func TestAlibabaTraceIdleTimeIsFree(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), []byte(strings.Join(nodeColumns, ",")+"\nn,1000,1024,1,T4\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(strings.Join(podColumns, ",")+
		"\na,500,512,1,1000,,LS,Running,0,8640000,0\nb,500,512,1,1000,,LS,Running,8640001,8640100,8640001\n"), 0o644)
	ops := map[string]int{}
	r, err := Run(traceScenario(dir), Options{Trace: func(op Op) { ops[op.Kind]++ }})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scheduled != 2 || ops["tick"] > 2 || ops["pop"] != 2 {
		t.Fatalf("scheduled %d, ops %v: want both pods bound, 2 pops and no flush work in the idle days", r.Scheduled, ops)
	}
}
