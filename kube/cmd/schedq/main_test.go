package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBadInput: every mistake is an error that names the problem; main
// prints it and exits 1.
func TestBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"scheduler", "--kubeconfig", "/no/such/file"}, "kubeconfig /no/such/file"},
		{[]string{"scheduler", "--nope"}, "unknown flag: --nope"},
		{[]string{"scheduler", "--kubeconfig", "x", "--scoring", "fastest"}, `--scoring: "fastest"`},
		{[]string{"scheduler", "--log-level", "loud"}, `--log-level: "loud"`},
		{[]string{"scheduler", "--scheduler-name", ""}, "--scheduler-name must not be empty"},
		{[]string{"explain", "no-slash"}, `"no-slash" is not NAMESPACE/NAME`},
		{[]string{"explain", "ns/p", "--address", "127.0.0.1:1"}, "scheduler at 127.0.0.1:1 is not reachable"},
		{[]string{"explain", "ns/p", "-o", "yaml"}, `--output: "yaml"`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRoot(&out, &errOut)
			root.SetArgs(tc.args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}
