package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// thousands writes n with a comma every three digits, as the docs do.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// TestShowcaseFigures: the default scenario's description (what --list
// prints) and docs/simulator.md give the attempts that the runs they
// suggest actually make, so the first comparison a newcomer tries shows
// what its text says.
//
// Its four runs of one goroutine take minutes under the race detector,
// which has nothing to find in them: it is skipped there, and with -short.
func TestShowcaseFigures(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("four single-threaded runs of NodeArrival: checked without -race and -short")
	}
	doc, err := os.ReadFile("../../docs/simulator.md")
	if err != nil {
		t.Fatal(err)
	}
	desc := strings.Join(strings.Fields(load(t, DefaultScenario).Description), " ")
	for _, settings := range []string{"", "hints=false", "wakeBudget=false", "hints=false,wakeBudget=false"} {
		sc := load(t, DefaultScenario)
		for kv := range strings.SplitSeq(settings, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				if err := sc.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		r := run(t, sc)
		want := thousands(r.Attempts)
		if !strings.Contains(desc, want) {
			t.Errorf("%s makes %s attempts; the description does not say so: %s", cmpOr(settings, "the default"), want, desc)
		}
		row := fmt.Sprintf("| %s | %s | %.2f | %s |", cmpOr("`"+settings+"`", "(the defaults)"), want, perPod(r.Attempts, r.Pods), thousands(r.WastedAttempts))
		if settings == "" {
			row = fmt.Sprintf("| (the defaults) | %s | %.2f | %s |", want, perPod(r.Attempts, r.Pods), thousands(r.WastedAttempts))
		}
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/simulator.md lacks the row %s", row)
		}
	}
	if !strings.Contains(desc, "--compare hints=false,wakeBudget=false") || !strings.Contains(string(doc), "simulate --compare hints=false,wakeBudget=false\n") {
		t.Error("the description and the first example should suggest --compare hints=false,wakeBudget=false")
	}
}
