package main

import (
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
		`apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 1`,
	}, "\n"), time.Second, 0)
	after := parseAPILoad(strings.Join([]string{
		`apiserver_request_total{code="201",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 30`,
		`apiserver_request_total{code="409",component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2`,
		`apiserver_request_total{code="201",component="apiserver",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 4`,
		`apiserver_request_duration_seconds_sum{component="apiserver",group="",resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 3.2`,
		`apiserver_watch_events_total{group="",resource="pods",version="v1"} 47`,
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
