package main

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// waitAll ends when every pod is bound; a scheduler that exits ends it at
// once, not after the timeout; either failure says how far it got.
func TestWaitAll(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bound     []string
		exits     bool
		want      string // part of the error; "" for none
		wantAfter time.Duration
	}{
		{"all bound", []string{"a", "b"}, false, "", 0},
		{"all bound, the scheduler gone since", []string{"a", "b"}, true, "", 0},
		{"the scheduler exited", []string{"a"}, true, "exited with 1 of 2 pods", 0},
		{"a timeout", []string{"a"}, false, "1 of 2 pods of ns bound after 1m0s", time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := &env{ns: "ns", pods: []string{"a", "b"}, boundAt: map[string]time.Time{}}
				for _, n := range tc.bound {
					e.boundAt[n] = time.Now()
				}
				exited := make(chan struct{})
				if tc.exits {
					close(exited)
				}
				start := time.Now()
				err := e.waitAll(exited, time.Minute)
				if took := time.Since(start); took != tc.wantAfter {
					t.Errorf("waitAll took %v, want %v", took, tc.wantAfter)
				}
				if tc.want == "" {
					if err != nil {
						t.Fatalf("waitAll = %v, want nil", err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("waitAll = %v, want an error with %q", err, tc.want)
				}
			})
		})
	}
}
