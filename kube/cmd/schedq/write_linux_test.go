package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSimulateFailedWriteLeavesNoFile: an output that cannot be written in
// full (here past a file size limit, as on a full disk) is an error naming
// the flag, and leaves no half-written file, nor the temporary file it was
// written to; an output that was there before is kept as it was; the
// summary is still printed.
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
			if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*")); len(left) > 0 {
				t.Errorf("temporary files left behind: %q", left)
			}
			if !strings.Contains(out, "scenario EarlyRetry") {
				t.Errorf("no summary on stdout: %q", out)
			}
		})
	}
}

// TestSimulateFailedWriteKeepsTheOldOutput: a run whose output cannot be
// written leaves the output of the run before untouched.
func TestSimulateFailedWriteKeepsTheOldOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.csv")
	if err := os.WriteFile(path, []byte("the last run's records\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	var err error
	withFileSizeLimit(t, 1024, func() {
		_, _, err = executeErr("simulate", "--progress=off", "--scenario", "EarlyRetry", "--records", path)
	})
	if err == nil {
		t.Fatal("the write past the limit succeeded")
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil || string(b) != "the last run's records\n" {
		t.Fatalf("the old output is now %q, %v", b, rerr)
	}
	if _, _, err := executeErr("simulate", "--progress=off", "--scenario", "EarlyRetry", "--records", path); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o640 || st.Size() < 1024 {
		t.Fatalf("after a run that succeeds: %v, %v (want mode 0640 kept and the new records)", st, err)
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

// TestSimulateUnwritableOutputRefusedBeforeRunning: an output in a
// directory where no file can be created (/proc) is refused before the
// run, naming the flag, rather than after it, when the run's work would
// be lost. The snapshot is malformed: an error about it would mean the
// run had started.
func TestSimulateUnwritableOutputRefusedBeforeRunning(t *testing.T) {
	badSnap := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(badSnap, []byte("apiVersion: v1\nkind: Nonsense\n"), 0o644)
	for _, tc := range []struct{ flag, path string }{
		{"--records", "/proc/r.csv"},
		{"--series", "/proc/s.csv"},
		{"--report", "/proc/r.html"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			_, _, err := executeErr("simulate", "--progress=off", "--snapshot", badSnap, tc.flag, tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.flag+" "+tc.path+": directory /proc cannot be written") {
				t.Fatalf("error %v, want %s refused before the run", err, tc.flag)
			}
		})
	}
}

// TestSimulateUnwritableOutputFileRefusedBeforeRunning: an output file
// that is there and cannot be written (read-only to this user, or
// immutable) is refused before the run, naming the flag, and left as it
// was, rather than found unwritable after the run, or replaced by the
// rename of a new file beside it (which a read-only file does not
// stop). The snapshot is malformed: an error about it would mean the
// run had started.
func TestSimulateUnwritableOutputFileRefusedBeforeRunning(t *testing.T) {
	badSnap := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(badSnap, []byte("apiVersion: v1\nkind: Nonsense\n"), 0o644)
	for _, tc := range []struct {
		name, flag, file string
		lock             func(t *testing.T, path string) // makes path unwritable, or skips
	}{
		{"read-only records", "--records", "r.csv", readOnly},
		{"read-only report", "--report", "r.html", readOnly},
		{"immutable series", "--series", "s.csv", immutable},
		{"immutable report", "--report", "r.html", immutable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.file)
			const old = "the last run's output\n"
			if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.lock(t, path)
			_, _, err := executeErr("simulate", "--progress=off", "--snapshot", badSnap, tc.flag, path)
			if err == nil || !strings.Contains(err.Error(), tc.flag+" "+path+": cannot be written: ") {
				t.Fatalf("error %v, want %s refused before the run", err, tc.flag)
			}
			if b, err := os.ReadFile(path); err != nil || string(b) != old {
				t.Fatalf("%s is now %q, %v", path, b, err)
			}
		})
	}
}

// readOnly makes path read-only; root writes it all the same, so the
// test is skipped as root.
func readOnly(t *testing.T, path string) {
	if os.Geteuid() == 0 {
		t.Skip("root may write a read-only file")
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}
}

// immutable sets the immutable attribute of path (chattr +i), which
// stops root too, and clears it at the end; it skips where the
// attribute cannot be set (not root, no chattr, a file system without
// it).
func immutable(t *testing.T, path string) {
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
}
