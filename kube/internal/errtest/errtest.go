// Package errtest holds the one check the tests of the kube module share
// for bad input: an error was returned, and its text names each thing
// the test expects it to name.
package errtest

import (
	"strings"
	"testing"
)

// Names fails t at once if err is nil ("accepted"), and reports each of
// want that err's text does not contain. O(len(want) × len(err's text)).
func Names(t testing.TB, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
		return // for a testing.TB whose Fatal returns
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
