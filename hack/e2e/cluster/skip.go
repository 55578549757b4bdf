package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvSkipReport names a file to which every skipped part of the
// end-to-end tests appends one line ("package: test: reason"). .ci/run sets
// it and prints the file at the end, since go test shows skips only with -v.
const EnvSkipReport = "SCHEDQ_SKIP_REPORT"

// noTestsToRun is the line the testing package prints when no test ran.
// go test turns it into " [no tests to run]" on the package's "ok" line,
// the only part of a passing package's output it shows without -v.
const noTestsToRun = "testing: warning: no tests to run"

// recordSkip appends what was skipped and why to $SCHEDQ_SKIP_REPORT, if
// set. A report that cannot be written is reported on stderr, not fatal.
func recordSkip(what, reason string) {
	path := os.Getenv(EnvSkipReport)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = fmt.Fprintf(f, "%s: %s\n", what, reason)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cluster: recording a skip in %s: %v\n", path, err)
	}
}

// testPackage is the last element of the running test binary's package
// path, e.g. "scheduler" for hack/e2e/scheduler.
func testPackage() string {
	return strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
}

// skipPackage is TestMain's skip: it prints the reason (shown with -v),
// makes go test's "ok" line end in "[no tests to run]" (shown always) and
// records the skip.
func skipPackage(pkg, reason string) {
	fmt.Printf("SKIP: %s: %s\n%s\n", pkg, reason, noTestsToRun)
	recordSkip(pkg, reason)
}

// Skip skips t, recording the reason in $SCHEDQ_SKIP_REPORT.
func Skip(t testing.TB, reason string) {
	t.Helper()
	recordSkip(testPackage()+": "+t.Name(), reason)
	t.Skip(reason)
}

// Missing is for a test that cannot run because something it needs is
// missing (err says what and how to get it): it fails t when
// SCHEDQ_E2E=required, and otherwise skips it like Skip.
func Missing(t testing.TB, err error) {
	t.Helper()
	if required() {
		t.Fatalf("%v (and %s=required)", err, EnvE2E)
	}
	Skip(t, fmt.Sprintf("%v (set %s=required to make this a failure)", err, EnvE2E))
}

// SkipPackage is for a TestMain that cannot run any of its package's
// tests for a reason of its own (MainWith handles missing binaries): it
// prints and records the reason as MainWith's skips do.
func SkipPackage(reason string) { skipPackage(testPackage(), reason) }
