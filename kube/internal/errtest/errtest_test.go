package errtest

import (
	"errors"
	"testing"
)

// recorder notes what Names reports instead of failing the test.
type recorder struct {
	testing.TB
	errors, fatals int
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }
func (r *recorder) Fatal(...any)          { r.fatals++ }

// TestNames: a nil error is fatal; each expected text missing from the
// error is one error; an error naming everything reports nothing.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		name           string
		err            error
		want           []string
		errors, fatals int
	}{
		{"nil error", nil, []string{"x"}, 0, 1},
		{"names all", errors.New("--config f.yaml: field a.b"), []string{"f.yaml", "a.b"}, 0, 0},
		{"misses two", errors.New("--config f.yaml"), []string{"f.yaml", "a.b", "zz"}, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Names(r, tc.err, tc.want...)
			if r.errors != tc.errors || r.fatals != tc.fatals {
				t.Errorf("errors %d, fatals %d; want %d, %d", r.errors, r.fatals, tc.errors, tc.fatals)
			}
		})
	}
}
