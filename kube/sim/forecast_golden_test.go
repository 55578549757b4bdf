package sim

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// goldenState is a mixed state for the forecast's golden answers: 40
// full 8-core nodes whose running pods of 1, 2 and 4 cores end over two
// hours (some never, by estimate), and 300 pending pods of 1 to 5 cores,
// of two priorities, most with a declared runtime. Pods of equal
// requests wait side by side and among others, so a change in who is
// offered freed room, and in what order, shows in the answers.
func goldenState() *ForecastState {
	now := epoch.Add(time.Hour)
	st := &ForecastState{Now: now,
		Nodes: newCluster().makeNodes(NodeGroup{Name: "n", Count: 40, Capacity: map[string]string{"cpu": "8", "memory": "32Gi"}})}
	st.Namespaces = []*v1.Namespace{{}}
	st.Namespaces[0].Name = "default"
	sizes := [][]string{{"4", "2", "2"}, {"2", "2", "2", "1", "1"}, {"1", "1", "2", "4"}}
	r := 0
	for n := range 40 {
		for _, cpu := range sizes[n%3] {
			life := fmt.Sprintf("%dm", 20+(r*37)%100)
			if r%17 == 5 {
				life = "" // runs until unknown
			}
			p := testPod(fmt.Sprintf("r-%d", r), fmt.Sprintf("n-%d", n), cpu, life)
			st.Running = append(st.Running, RunningPod{Pod: p, Started: now.Add(-time.Duration(r%23) * time.Minute)})
			r++
		}
	}
	for i := range 300 {
		life := fmt.Sprintf("%dm", 5+(i*13)%50)
		if i%41 == 7 {
			life = ""
		}
		p := testPod(fmt.Sprintf("p-%d", i), "", fmt.Sprint(1+(i*7)%5), life)
		if i%9 == 0 {
			prio := int32(100)
			p.Spec.Priority = &prio
		}
		st.Pending = append(st.Pending, p)
	}
	return st
}

// forecastText is a forecast, one line per pod, in the state's order.
func forecastText(f *Forecast) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ends %v unknown %d\n", f.Ends, f.Unknown)
	for _, p := range f.Pods {
		fmt.Fprintf(&b, "%s starts=%v wait=%v node=%s basis=%v unknown=%d\n", p.Pod.Name, p.Starts, p.Wait, p.Node, p.Basis, p.Unknown)
	}
	return b.String()
}

// TestForecastGolden pins the forecast and a what-if of goldenState, so
// that a change to how the forecast runs (to make it faster) is seen to
// keep its answers. Regenerate with -update only for an intended change.
func TestForecastGolden(t *testing.T) {
	st := goldenState()
	sc := &Scenario{Name: "golden", Seed: 1}
	o := ForecastOptions{Horizon: 12 * time.Hour}
	f, err := RunForecast(sc, st, o)
	if err != nil {
		t.Fatal(err)
	}
	in := &WhatIfInput{Pods: []*v1.Pod{testPod("w", "", "3", "1h")}}
	in.Pods[0].UID = types.UID("")
	w, err := RunWhatIf(sc, st, in, o)
	if err != nil {
		t.Fatal(err)
	}
	wj, err := json.MarshalIndent(w, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got := forecastText(f) + "what-if:\n" + string(wj) + "\n"
	checkGolden(t, filepath.Join("testdata", "forecast.golden"), got)
}
