package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const shortNodes = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,T4\nn1,64000,262144,2,T4\n"

// writeTrace writes a node list and a pod list into a new directory.
func writeTrace(t *testing.T, nodes, pods string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "openb_node_list_all_node.csv"), []byte(nodes), 0o644)
	os.WriteFile(filepath.Join(dir, "openb_pod_list_default.csv"), []byte(pods), 0o644)
	return dir
}

// A pod list with only name,cpu_milli,memory_mib,num_gpu,gpu_milli loads:
// its pods arrive together at the start, in file order or in the seed's
// order, and none is ever deleted.
func TestAlibabaTraceUntimedList(t *testing.T) {
	pods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		pods += "p-" + n + ",1000,1024,1,500\n"
	}
	dir := writeTrace(t, shortNodes, pods)
	for _, c := range []struct {
		name, order string
		fileOrder   bool
	}{
		{"file order by default", "", true},
		{"file order named", TraceOrderFile, true},
		{"seeded random order", TraceOrderRandom, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := traceScenario(dir)
			sc.Trace.Order = c.order
			r := run(t, sc)
			if r.Pods != 6 || r.Scheduled != 6 || r.Finished != 0 || r.Withdrawn != 0 || r.Production != nil {
				t.Fatalf("pods %d scheduled %d finished %d withdrawn %d production %v: want 6 bound, none ended, no production run",
					r.Pods, r.Scheduled, r.Finished, r.Withdrawn, r.Production)
			}
			var names []string
			for _, rec := range r.Records {
				if rec.Created != 0 {
					t.Errorf("%s created at %vs, want 0", rec.Name, rec.Created)
				}
				names = append(names, rec.Name)
			}
			if sorted := slices.IsSorted(names); sorted != c.fileOrder {
				t.Errorf("arrival order %v, want file order %v", names, c.fileOrder)
			}
			if again := run(t, sc); text(again) != text(r) {
				t.Errorf("two runs of one seed differ")
			}
		})
	}
	if _, err := Parse([]byte("name: x\ntrace: {format: alibaba-gpu-v2023, dir: d, order: backwards}\n")); err == nil || !strings.Contains(err.Error(), `trace.order: "backwards" is not file or random`) {
		t.Fatalf("bad order: %v", err)
	}
}

// Unknown or missing columns, and counts or shares out of range, are
// refused with the file, the line and what was expected.
func TestAlibabaTraceColumnSets(t *testing.T) {
	short := "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
	full := strings.Join(podColumns, ",") + "\n"
	want := `want "` + strings.TrimSuffix(full, "\n") + `" or "` + strings.TrimSuffix(short, "\n") + `"`
	for _, c := range []struct{ name, pods, want string }{
		{"unknown column", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\n", `openb_pod_list_default.csv:1: header is "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour", ` + want},
		{"missing column", "name,cpu_milli,memory_mib,num_gpu\n", `openb_pod_list_default.csv:1: header is "name,cpu_milli,memory_mib,num_gpu", ` + want},
		{"columns out of order", "name,memory_mib,cpu_milli,num_gpu,gpu_milli\n", "openb_pod_list_default.csv:1: header is"},
		{"empty", "", "openb_pod_list_default.csv: empty file (want the header " + strings.TrimPrefix(want, "want ")},
		{"row with a field too many", short + "p,1000,1024,1,500\nq,1000,1024,1,500,T4\n", "openb_pod_list_default.csv:3: 6 fields, want 5: name,cpu_milli,memory_mib,num_gpu,gpu_milli"},
		{"row with a field too few", full + "p,1000,1024,1,500\n", "openb_pod_list_default.csv:2: 5 fields, want 11"},
		{"gpu count out of range", short + "p,1000,1024,65,1000\n", "openb_pod_list_default.csv:2: column num_gpu: \"65\" is not an integer from 0 to 64"},
		{"negative gpu count", short + "p,1000,1024,-1,1000\n", "openb_pod_list_default.csv:2: column num_gpu"},
		{"share out of range", short + "p,1000,1024,1,1001\n", "openb_pod_list_default.csv:2: column gpu_milli: \"1001\" is not an integer from 0 to 1000"},
		{"share of several gpus", short + "p,1000,1024,2,500\n", "openb_pod_list_default.csv:2: column gpu_milli: 500 with num_gpu 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(traceScenario(writeTrace(t, shortNodes, c.pods)), Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v\nwant %q", err, c.want)
			}
		})
	}
}

// A trace pod carries its requests as labels, for History to group
// runtimes by: its GPUs (none, a share of one, several whole) and all of
// its requests.
func TestAlibabaTraceRequestLabels(t *testing.T) {
	pods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np-a,3152,5600,1,470\np-b,1000,1024,0,0\np-c,32000,49152,2,1000\n"
	tr, err := readAlibabaTrace(&TraceSpec{Format: TraceAlibabaGPU, Dir: writeTrace(t, shortNodes, pods)})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"1x470", "3152m-5600Mi-1x470"}, {"0", "1000m-1024Mi-0"}, {"2x1000", "32000m-49152Mi-2x1000"}}
	for i, tp := range tr.pods {
		l := tp.pod.Labels
		if got := [2]string{l[LabelGPURequest], l[LabelRequests]}; got != want[i] {
			t.Errorf("%s: labels %v, want %s=%s and %s=%s", tp.pod.Name, l, LabelGPURequest, want[i][0], LabelRequests, want[i][1])
		}
	}
}

// A pod list with time columns arrives at its creation times: a random
// order, which would be ignored, is refused, naming the field and the file.
func TestAlibabaTraceRandomOrderNeedsAnUntimedList(t *testing.T) {
	sc := traceScenario("testdata/alibaba")
	sc.Trace.Order = TraceOrderRandom
	_, err := Run(sc, Options{})
	if err == nil || !strings.Contains(err.Error(), "trace.order (--trace-order) random: testdata/alibaba/openb_pod_list_default.csv has time columns: its pods arrive at their creation_time") {
		t.Fatalf("error %v, want trace.order refused for a timed list", err)
	}
	sc.Trace.Order = TraceOrderFile
	if _, err := Run(sc, Options{}); err != nil {
		t.Fatalf("order file, the default: %v", err)
	}
}

// A pod list without time columns arrives whole at the start: a speed,
// which would be ignored, is refused, naming the field and the file.
func TestAlibabaTraceSpeedNeedsATimedList(t *testing.T) {
	dir := writeTrace(t, shortNodes, "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1000,1024,1,500\n")
	sc := traceScenario(dir)
	sc.Trace.Speed = 10
	_, err := Run(sc, Options{})
	if err == nil || !strings.Contains(err.Error(), "trace.speed (--trace-speed) 10: "+filepath.Join(dir, "openb_pod_list_default.csv")+" has no time columns: its pods all arrive at the start") {
		t.Fatalf("error %v, want trace.speed refused for an untimed list", err)
	}
	sc.Trace.Speed = 1
	if _, err := Run(sc, Options{}); err != nil {
		t.Fatalf("speed 1: %v", err)
	}
}
