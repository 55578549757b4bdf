package sim

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"
)

// outputBytes is everything a run and its comparison with one setting
// changed print: the text report, the JSON report (without the wall
// clock), the records in both formats, the series, the report page, and
// the comparison's text and page.
func outputBytes(t *testing.T, scenario func() *Scenario, key, value string) map[string][]byte {
	t.Helper()
	a := run(t, scenario())
	other := scenario()
	if err := other.Set(key, value); err != nil {
		t.Fatal(err)
	}
	b := run(t, other)
	out := map[string][]byte{}
	write := func(name string, f func(*bytes.Buffer) error) {
		var buf bytes.Buffer
		if err := f(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = buf.Bytes()
	}
	write("text", func(w *bytes.Buffer) error { a.WriteText(w, false); return nil })
	write("json", func(w *bytes.Buffer) error {
		a.Wall, b.Wall = nil, nil
		return json.NewEncoder(w).Encode(map[string]any{"baseline": a, "compare": b})
	})
	write("records.jsonl", func(w *bytes.Buffer) error { return a.WriteRecords(w, ".jsonl") })
	write("records.csv", func(w *bytes.Buffer) error { return a.WriteRecords(w, ".csv") })
	write("series", func(w *bytes.Buffer) error { return a.WriteSeries(w) })
	write("page", func(w *bytes.Buffer) error { return a.WriteHTML(w) })
	write("comparison", func(w *bytes.Buffer) error { WriteComparison(w, a, b, "baseline", key+"="+value, false); return nil })
	write("comparison page", func(w *bytes.Buffer) error {
		return WriteComparisonHTML(w, a, b, "baseline", key+"="+value, Window{})
	})
	return out
}

// TestSameBytes: two runs of one input and seed print the same bytes in
// every output, --compare's included, with GOMAXPROCS 1 and 2 (the run is
// single-threaded; nothing of the Go scheduler or of map order may leak).
// Small inputs of each kind: built-in scenarios with DRA, volumes and
// gangs, the trace fixture and the snapshot fixture.
func TestSameBytes(t *testing.T) {
	builtin := func(name string) func() *Scenario { return func() *Scenario { return load(t, name) } }
	for _, c := range []struct {
		name       string
		scenario   func() *Scenario
		key, value string
	}{
		{"DeviceClaims", builtin("DeviceClaims"), "bindLatency", "1s"},
		{"VolumeWait", builtin("VolumeWait"), "hints", "false"},
		{"EarlyRetry", builtin("EarlyRetry"), "popFromBackoff", "false"},
		{"trace fixture", func() *Scenario { return traceScenario("testdata/alibaba") }, "gpuModel", "capacity"},
		{"snapshot fixture", func() *Scenario { return snapshotScenario("testdata/snapshot/cluster.yaml") }, "wakeBudget", "false"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			first := outputBytes(t, c.scenario, c.key, c.value)
			runtime.GOMAXPROCS(2)
			second := outputBytes(t, c.scenario, c.key, c.value)
			for _, name := range sortedKeys(first) {
				if !bytes.Equal(first[name], second[name]) {
					t.Errorf("%s differs between two runs (GOMAXPROCS 1, then 2)", name)
				}
			}
		})
	}
}
