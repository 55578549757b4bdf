package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestSchedulerFlagsDocumented: docs/scheduler.md lists every flag of
// "schedq scheduler", so the page cannot fall behind --help.
func TestSchedulerFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "scheduler.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sched *pflag.FlagSet
	for _, c := range newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Commands() {
		if c.Name() == "scheduler" {
			c.InitDefaultHelpFlag()
			c.InitDefaultVersionFlag()
			sched = c.Flags()
		}
	}
	if sched == nil {
		t.Fatal("no scheduler command")
	}
	n := 0
	sched.VisitAll(func(f *pflag.Flag) {
		n++
		if !strings.Contains(string(doc), "`--"+f.Name+"`") {
			t.Errorf("docs/scheduler.md does not list --%s", f.Name)
		}
	})
	if n < 17 {
		t.Fatalf("only %d flags seen", n)
	}
}
