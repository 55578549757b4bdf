package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/schedq/schedq/kube/sim"
)

// fakeRecord stands in for recording the simulator's NodeArrival stream.
func fakeRecord(ops []sim.Op, err error) func(string) ([]sim.Op, error) {
	return func(string) ([]sim.Op, error) { return ops, err }
}

// idle is a benchmark that does next to nothing and succeeds.
func idle(b *testing.B) {
	for b.Loop() {
	}
}

// sink keeps busy's work.
var sink int

// busy is a benchmark that succeeds with more than 0 ns/op.
func busy(b *testing.B) {
	for b.Loop() {
		for i := range 1000 {
			sink += i
		}
	}
}

// tableLine returns the printed line of a peer's row, or "".
func tableLine(out, scenario, peer string) string {
	for _, line := range strings.Split(out, "\n") {
		f, k := strings.Fields(line), len(strings.Fields(scenario))+1 // scenario, N, peer
		if strings.HasPrefix(strings.TrimSpace(line), scenario) && len(f) > k && f[k] == peer {
			return line
		}
	}
	return ""
}

// A benchmark that fails reports no figure: testing.Benchmark returns a
// zero result for it, which the table must not print as 0 ns/op (nor as an
// infinite ratio), and the run must count as failed.
func TestRunAllFailedBenchmark(t *testing.T) {
	for _, tc := range []struct {
		name       string
		broken     Peer
		wantFailed bool
	}{
		{"a benchmark calling Fatal", Peer{Name: "broken", AddPopDone: func(int) func(*testing.B) {
			return func(b *testing.B) { b.Fatal("boom") }
		}}, true},
		{"a benchmark calling Skip", Peer{Name: "broken", AddPopDone: func(int) func(*testing.B) {
			return func(b *testing.B) { b.Skip("not today") }
		}}, true},
		{"a benchmark that runs", Peer{Name: "broken", AddPopDone: func(int) func(*testing.B) { return busy }}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := Peer{Name: "schedq", AddPopDone: func(int) func(*testing.B) { return busy }}
			rows := runAll([]Peer{tc.broken, ours}, []int{1}, nil, "add+pop", io.Discard)
			var out strings.Builder
			printTable(&out, rows)
			line := tableLine(out.String(), "add+pop+done", "broken")
			if line == "" {
				t.Fatalf("no row for the broken peer in:\n%s", out.String())
			}
			if got := strings.Contains(line, "failed"); got != tc.wantFailed {
				t.Errorf("row says failed: %v, want %v:\n%s", got, tc.wantFailed, line)
			}
			if strings.Contains(line, "Inf") {
				t.Errorf("row has an infinite ratio:\n%s", line)
			}
			if got := failures(rows); (got > 0) != tc.wantFailed {
				t.Errorf("failures = %d, want failed %v", got, tc.wantFailed)
			}
		})
	}
}

// -only matches the scenario names the table prints, the NodeArrival
// stream's and the memory rows' included.
func TestOnlyMatchesTableNames(t *testing.T) {
	defer func(r func(string) ([]sim.Op, error)) { recordStream = r }(recordStream)
	recordStream = fakeRecord([]sim.Op{{Kind: "tick"}}, nil)
	p := Peer{
		Name:         "schedq",
		Stream:       func([]sim.Op) func(*testing.B) { return idle },
		BytesPerItem: func(int) float64 { return 1 },
	}
	for _, tc := range []struct {
		name, only, want string
	}{
		{"the stream's table name", "NodeArrival stream", "NodeArrival stream"},
		{"a part of the stream's name", "arrival stream", "NodeArrival stream"},
		{"every stream", "stream", "NodeArrival stream"},
		{"the memory rows' table name", "memory/queued item", "memory/queued item"},
		{"a part of the memory rows' name", "queued item", "memory/queued item"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := runAll([]Peer{p}, []int{1}, nil, tc.only, io.Discard)
			for _, r := range rows {
				if r.scenario == tc.want {
					return
				}
			}
			t.Errorf("-only %q ran no %q row (rows: %v)", tc.only, tc.want, rows)
		})
	}
}

// A NodeArrival stream that cannot be recorded shows as failed rows and
// counts as a failure, rather than leaving the rows out.
func TestRecordStreamFailure(t *testing.T) {
	defer func(r func(string) ([]sim.Op, error)) { recordStream = r }(recordStream)
	recordStream = fakeRecord(nil, errors.New("no scenario"))
	p := Peer{Name: "schedq", Stream: func([]sim.Op) func(*testing.B) { return idle }}
	rows := runAll([]Peer{p}, nil, nil, "nodearrival", io.Discard)
	if failures(rows) == 0 {
		t.Fatalf("failures = 0, want the NodeArrival rows failed (rows: %v)", rows)
	}
	var out strings.Builder
	printTable(&out, rows)
	if line := tableLine(out.String(), "NodeArrival stream", "schedq"); !strings.Contains(line, "no scenario") {
		t.Errorf("the row does not say why:\n%s", out.String())
	}
}

// checkFlags refuses, naming the flag, what would run nothing or something
// else than asked.
func TestCheckFlags(t *testing.T) {
	for _, tc := range []struct {
		name, only string
		args       []string
		want       string // "" for no error
	}{
		{"no -only", "", nil, ""},
		{"a scenario, any case", "MEMORY", nil, ""},
		{"the stream", "nodearrival", nil, ""},
		{"an -only matching nothing", "nosuch", nil, `-only "nosuch"`},
		{"a stray argument", "", []string{"quick"}, `"quick"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFlags(tc.only, tc.args)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("checkFlags = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("checkFlags = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
