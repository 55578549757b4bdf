package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// printReports prints each workload's own figures under the table, one
// block per workload, and says whether the signatures of the schedulers
// that ran it agree. O(results).
func printReports(w io.Writer, results []result) {
	sigs := map[string][]string{}
	var order []string
	for _, r := range results {
		if r.err != nil || (len(r.report.lines) == 0 && r.report.signature == "") {
			continue
		}
		if _, ok := sigs[r.workload]; !ok {
			order = append(order, r.workload)
			fmt.Fprintf(w, "\n%s:\n", r.workload)
		}
		sigs[r.workload] = append(sigs[r.workload], r.report.signature)
		for _, line := range r.report.lines {
			fmt.Fprintf(w, "  %s: %s\n", r.scheduler, line)
		}
	}
	for _, name := range order {
		s := sigs[name]
		if len(s) < 2 || s[0] == "" {
			continue
		}
		same := "the same for every scheduler"
		for _, x := range s[1:] {
			if x != s[0] {
				same = "different between the schedulers"
			}
		}
		fmt.Fprintf(w, "%s: %s\n", name, same)
	}
}

// metricSum adds up every sample of the metric name in a Prometheus text
// exposition (all label sets). O(len(text)).
func metricSum(text, name string) float64 {
	return metricByLabel(text, name, "")[""]
}

// metricByLabel sums the samples of the metric name by the value of
// label ("" sums everything under the key ""). O(len(text)).
func metricByLabel(text, name, label string) map[string]float64 {
	out := map[string]float64{}
	eachSample(text, name, func(labels string, v float64) { out[labelValue(labels, label)] += v })
	return out
}

// labelValue returns the value of label in `{a="x",b="y"}`, or "".
func labelValue(labels, label string) string {
	if label == "" {
		return ""
	}
	_, after, ok := strings.Cut(labels, label+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// formatCounts prints a map of counts as "k1 n1, k2 n2" in key order.
func formatCounts(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.0f", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// quantiles returns the p50 and p99 of ds (sorted in place), or zeros.
func quantiles(ds []time.Duration) (time.Duration, time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

// waitBound polls (every 50ms, up to timeout) until every pod in names
// has been seen bound. It is how a workload waits for a phase to settle
// before its next event.
func (e *env) waitBound(names []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, n := range names {
			if _, ok := e.boundAt[n]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pods of %s to bind: %w", len(names), e.ns, err)
	}
	return nil
}

// bound returns when each pod of names was first seen bound (ok false
// for one never seen bound).
func (e *env) bound(names []string) ([]time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := make([]time.Time, len(names))
	for i, n := range names {
		t, ok := e.boundAt[n]
		if !ok {
			return nil, false
		}
		ts[i] = t
	}
	return ts, true
}

// metricOrNone prints the sum of a metric, or "not exposed".
func metricOrNone(text, name string) string {
	v, ok := metricByLabel(text, name, "")[""]
	if !ok {
		return "not exposed"
	}
	return fmt.Sprintf("%.0f", v)
}
