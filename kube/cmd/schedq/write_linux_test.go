package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSimulateFailedWriteLeavesNoFile: an output that cannot be written in
// full (here past a file size limit, as on a full disk) is an error naming
// the flag, and is removed rather than left half-written; the summary is
// still printed.
func TestSimulateFailedWriteLeavesNoFile(t *testing.T) {
	for _, tc := range []struct{ flag, file string }{
		{"--records", "r.csv"},
		{"--series", "s.csv"},
		{"--report", "r.html"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			var out string
			var err error
			withFileSizeLimit(t, 1024, func() {
				out, _, err = executeErr("simulate", "--progress=off", "--scenario", "EarlyRetry", tc.flag, path)
			})
			if err == nil || !strings.Contains(err.Error(), tc.flag+": "+path) {
				t.Fatalf("error %v, want one naming %s %s", err, tc.flag, path)
			}
			if _, serr := os.Stat(path); serr == nil {
				t.Errorf("%s was left behind", path)
			}
			if !strings.Contains(out, "scenario EarlyRetry") {
				t.Errorf("no summary on stdout: %q", out)
			}
		})
	}
}

// withFileSizeLimit runs f with the process's file size limit (RLIMIT_FSIZE)
// at limit bytes: a write past it fails (EFBIG; Go ignores SIGXFSZ).
func withFileSizeLimit(t *testing.T, limit uint64, f func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip("no RLIMIT_FSIZE:", err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skip("cannot set RLIMIT_FSIZE:", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
	}()
	f()
}
