package cluster

import (
	"fmt"
	"os"
	"testing"
)

// Figure records a figure a test measured: in the test's log, and as a
// line of the file $SCHEDQ_E2E_REPORT names (which .ci/run prints), since
// go test hides the logs of passing packages.
func Figure(t testing.TB, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf("%s: %s", t.Name(), fmt.Sprintf(format, args...))
	t.Log(line)
	if path := os.Getenv("SCHEDQ_E2E_REPORT"); path != "" {
		if f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintln(f, line)
			f.Close()
		}
	}
}
