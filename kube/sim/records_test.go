package sim

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

func outputs(t *testing.T, r *Report) (jsonl, csvOut, series string) {
	t.Helper()
	var a, b, c bytes.Buffer
	if err := r.WriteRecords(&a, ".jsonl"); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteRecords(&b, ".csv"); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSeries(&c); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String(), c.String()
}

// Records and series are the same bytes for the same seed, one record per
// pod, and the series carries the queue and the allocation.
func TestRecordsAndSeries(t *testing.T) {
	sc := `
name: rec
seed: 5
nodes: [{name: n, count: 2, capacity: {cpu: "2", memory: 4Gi}}]
pods:
  - {name: job, count: 10, requests: {cpu: "1", memory: 1Gi}, arrival: {rate: 2}, lifetime: {distribution: exponential, mean: 20s}}
  - {name: huge, count: 1, requests: {cpu: "64"}}
`
	r1, r2 := run(t, parse(t, sc)), run(t, parse(t, sc))
	j1, c1, s1 := outputs(t, r1)
	j2, c2, s2 := outputs(t, r2)
	if j1 != j2 || c1 != c2 || s1 != s2 {
		t.Fatal("two runs of one seed wrote different records or series")
	}
	var recs []PodRecord
	sc2 := bufio.NewScanner(strings.NewReader(j1))
	for sc2.Scan() {
		var rec PodRecord
		if err := json.Unmarshal(sc2.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 11 {
		t.Fatalf("%d JSON records, want 11", len(recs))
	}
	var h PodRecord
	for _, rec := range recs {
		if rec.Group == "huge" {
			h = rec
			continue
		}
		if rec.Group != "job" || !rec.Bound || rec.Node == "" || rec.End != endFinished || rec.FirstAttempt < rec.Created || rec.BoundAt < rec.FirstAttempt {
			t.Errorf("job record %+v", rec)
		}
	}
	if h.Bound || h.Place != "unschedulable" || !strings.Contains(h.LastFailure, "Insufficient cpu") || h.BoundAt != -1 {
		t.Errorf("huge record %+v, want unbound, parked, with its failure", h)
	}
	rows, err := csv.NewReader(strings.NewReader(c1)).ReadAll()
	if err != nil || len(rows) != 12 || strings.Join(rows[0], ",") != strings.Join(recordColumns, ",") {
		t.Fatalf("records CSV: %d rows, header %v, err %v", len(rows), rows[0], err)
	}
	series, err := csv.NewReader(strings.NewReader(s1)).ReadAll()
	if err != nil || strings.Join(series[0], ",") != "t,active,backoff,unschedulable,gated,inflight,cpu,memory,gpu" {
		t.Fatalf("series header %v, err %v", series[0], err)
	}
	full, parked := false, false
	for _, row := range series[1:] {
		full = full || row[6] == "1"
		parked = parked || row[3] != "0"
	}
	if !full || !parked {
		t.Fatalf("the series never shows the cluster's CPU full (%v) or a parked pod (%v)", full, parked)
	}
	if err := r1.WriteRecords(&bytes.Buffer{}, ".txt"); err == nil {
		t.Fatal("a .txt records file was accepted")
	}
}
