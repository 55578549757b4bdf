package main

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestAPILoadSince(t *testing.T) {
	before := parseAPILoad(strings.Join([]string{
		`# HELP apiserver_request_total Counter of apiserver requests.`,
		`apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 10`,
		`apiserver_request_total{code="201",component="apiserver",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 4`,
		`apiserver_request_duration_seconds_sum{component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 1`,
		`apiserver_request_total_other{verb="POST",resource="pods"} 99`,
		`apiserver_watch_events_total{group="",resource="pods",version="v1"} 7`,
		`apiserver_watch_events_sizes_sum{group="",resource="pods",version="v1"} 7000`,
		`apiserver_response_sizes_sum{component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 500`,
		`apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 1`,
	}, "\n"), time.Second, 0)
	after := parseAPILoad(strings.Join([]string{
		`apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 30`,
		`apiserver_request_total{code="409",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2`,
		`apiserver_request_total{code="201",component="apiserver",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 4`,
		`apiserver_request_duration_seconds_sum{component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 3.2`,
		`apiserver_watch_events_total{group="",resource="pods",version="v1"} 47`,
		`apiserver_watch_events_sizes_sum{group="",resource="pods",version="v1"} 47000`,
		`apiserver_watch_events_sizes_bucket{group="",resource="pods",version="v1",le="1024"} 47`,
		`apiserver_response_sizes_sum{component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2700`,
		`apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 2`,
		`apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="namespace",subresource="log",verb="GET",version="v1"} 5`,
	}, "\n"), 3*time.Second, 0)
	d := after.since(before)
	if got := d.requests["POST pods/binding"]; got != 22 {
		t.Errorf("POST pods/binding = %v, want 22 (both codes, less the count before)", got)
	}
	if _, ok := d.requests["POST events"]; ok || len(d.requests) != 1 {
		t.Errorf("requests = %v, want only the bindings (events did not change)", d.requests)
	}
	if got := d.watchEvents["pods"]; got != 40 {
		t.Errorf("watch events on pods = %v, want 40", got)
	}
	if got := d.watchBytes["pods"]; got != 40000 {
		t.Errorf("watch event bytes on pods = %v, want 40000 (the sum, not the buckets)", got)
	}
	if got := d.responseBytes["POST pods/binding"]; got != 2200 {
		t.Errorf("response bytes of POST pods/binding = %v, want 2200", got)
	}
	if got := d.watches; len(got) != 1 || got["pods"] != 1 {
		t.Errorf("watches = %v, want one more on pods (a GET is not a watch)", got)
	}
	if d.apiCPU != 2*time.Second {
		t.Errorf("API server CPU = %v, want 2s", d.apiCPU)
	}
	if got := meanTimes(d, 10, 0.005); got != "POST pods/binding 100.0 ms" {
		t.Errorf("meanTimes = %q", got)
	}
}

// TestPrintAPILoadAllocated: each run's line gives the bytes the
// scheduler allocated per pod, from its go_memstats_alloc_bytes_total.
func TestPrintAPILoadAllocated(t *testing.T) {
	var b strings.Builder
	printAPILoad(&b, []result{{workload: "basic", scheduler: "schedq", pods: 4, schedCPU: 2 * time.Millisecond, schedAlloc: 8 << 10}})
	if want := "basic / schedq: CPU kube-apiserver 0.00 ms, etcd 0.00 ms, scheduler 0.50 ms, compare-e2e 0.00 ms; the scheduler allocated 2.0 KB\n"; !strings.Contains(b.String(), want) {
		t.Errorf("printed\n%s\nwant a line\n%s", b.String(), want)
	}
}

// Each pair's ratio is schedq's pods/s over kube-scheduler's whichever
// ran first, with each run's CPU per pod of the four processes.
func TestPairResults(t *testing.T) {
	run := func(sched string, pair, position int, seconds float64, cpuMS int64) result {
		ms := time.Duration(cpuMS) * time.Millisecond
		return result{workload: "basic", scheduler: sched, pods: 1000, pair: pair, position: position,
			elapsed: time.Duration(seconds * float64(time.Second)),
			load:    apiLoad{apiCPU: ms, etcdCPU: ms, selfCPU: ms}, schedCPU: ms}
	}
	failed := run("schedq", 3, 2, 1, 500)
	failed.err = errors.New("timeout")
	results := []result{
		run("kube-scheduler v1.37.2", 1, 1, 2, 900), run("schedq", 1, 2, 1, 600),
		run("schedq", 2, 1, 1.25, 600), run("kube-scheduler v1.37.2", 2, 2, 2.5, 800),
		run("kube-scheduler v1.37.2", 3, 1, 2, 900), failed,
	}
	got := pairResults(results)
	want := []pairResult{
		{workload: "basic", pair: 1, first: "kube-scheduler v1.37.2", ratio: 2, cpu: [2]float64{3.6, 2.4}},
		{workload: "basic", pair: 2, first: "schedq", ratio: 2, cpu: [2]float64{3.2, 2.4}},
	}
	if len(got) != len(want) {
		t.Fatalf("pairResults = %+v, want %+v (the pair with a failed run left out)", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.workload != w.workload || g.pair != w.pair || g.first != w.first || math.Abs(g.ratio-w.ratio) > 1e-9 ||
			math.Abs(g.cpu[0]-w.cpu[0]) > 1e-9 || math.Abs(g.cpu[1]-w.cpu[1]) > 1e-9 {
			t.Errorf("pair %d = %+v, want %+v", i+1, g, w)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"one", []float64{1.3}, 1.3},
		{"odd, unsorted", []float64{1.5, 1.1, 1.3}, 1.3},
		{"even: the middle two's mean", []float64{1.4, 1.1, 1.2, 1.6}, 1.3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := median(tc.xs); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("median(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
}

// A run whose responses are all under the threshold says so, rather than
// ending the line on an empty list.
func TestPrintAPILoadBytes(t *testing.T) {
	var b strings.Builder
	printAPILoad(&b, []result{{workload: "basic", scheduler: "schedq", pods: 4, load: apiLoad{watchBytes: map[string]float64{"pods": 4 * 4096}}}})
	if want := "    bytes sent (KB): watch events pods 4.00; responses none\n"; !strings.Contains(b.String(), want) {
		t.Errorf("printed\n%s\nwant a line\n%s", b.String(), want)
	}
}

func TestGeomean(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"one", []float64{1.3}, 1.3},
		{"a ratio and its inverse", []float64{2, 0.5}, 1},
		{"two pairs", []float64{0.86, 1.6}, math.Sqrt(0.86 * 1.6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := geomean(tc.xs); math.Abs(got-tc.want) > 1e-9 {
				t.Fatalf("geomean(%v) = %v, want %v", tc.xs, got, tc.want)
			}
		})
	}
}
