package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/schedq/schedq/kube/sim"
)

func TestStatusLine(t *testing.T) {
	got := statusLine("trace", sim.Progress{Handled: 250, Total: 1000, Now: 90 * time.Minute}, 10*time.Second)
	for _, want := range []string{"[#######.......................]", "250/1000 pods handled", "1h30m0s virtual", "10s elapsed", "ETA 30s"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if got := statusLine("x", sim.Progress{Total: 10}, time.Second); !strings.Contains(got, "ETA --") {
		t.Errorf("nothing handled yet: %q", got)
	}
}

// The bar is driven by the run, on a fake clock.
func TestStatusBarDuringRun(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	sc, err := sim.Load("PriorityPressure")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(sc, sim.Options{Status: statusBar(&out, "pp", tick)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "300/400 pods handled") {
		t.Fatalf("last state %q, want 300 of the 400 pods handled (the 100 recreated victims never fit)", out.String()[max(0, out.Len()-120):])
	}
}

// While a large cluster is built, before virtual time starts, the bar
// says so and counts the nodes and pods.
func TestStatusBarWhileBuilding(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	tick := func() time.Time { clock = clock.Add(time.Second); return clock }
	sc, err := sim.Parse([]byte("name: big\nduration: 1s\nnodes: [{name: n, count: 9000, capacity: {cpu: \"1\"}}]\npods: [{name: p, count: 1, requests: {cpu: \"2\"}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(sc, sim.Options{Status: statusBar(&out, "big", tick)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"building the cluster: 4096/9001 nodes and pods", "building the cluster: 8192/9001 nodes and pods"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in %q", want, out.String()[:min(out.Len(), 300)])
		}
	}
}
