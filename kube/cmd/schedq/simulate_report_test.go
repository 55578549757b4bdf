package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateCompareReport: with --compare, --report writes one page
// holding both runs, named in its title, and no second file.
func TestSimulateCompareReport(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "r.html")
	if out, err := execute("simulate", "--scenario", "EarlyRetry", "--compare", "popFromBackoff=false", "--report", report, "--progress", "off"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>schedq simulation: EarlyRetry: baseline vs popFromBackoff=false</title>", `<th class="n">delta</th>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if files, _ := os.ReadDir(dir); len(files) != 1 {
		t.Errorf("%d files written, want the one page", len(files))
	}
}
