package main

import (
	"strings"
	"testing"
)

// TestEmptyFlagRefused: a string or list flag of simulate or whatif given
// an empty value (--gpu-policy ”) is refused, naming it, rather than
// taken for the flag left out: none takes empty as a choice. The flags
// with a message of their own keep it. So are the scheduler's flags that
// whatif shares (--history-label, --history-tail), which it took for
// their defaults until 2026-11-30.
func TestEmptyFlagRefused(t *testing.T) {
	const generic = ": empty; give a value, or leave the flag out for its default"
	for _, tc := range []struct {
		name, flag, want string
	}{
		{"simulate gpu-policy", "--gpu-policy", "--gpu-policy" + generic},
		{"simulate gpu-model", "--gpu-model", "--gpu-model" + generic},
		{"simulate config", "--config", "--config" + generic},
		{"simulate report", "--report", "--report" + generic},
		{"simulate records", "--records", "--records" + generic},
		{"simulate series", "--series", "--series" + generic},
		{"simulate trace", "--trace", "--trace" + generic},
		{"simulate trace-pods", "--trace-pods", "--trace-pods" + generic},
		{"simulate trace-order", "--trace-order", "--trace-order" + generic},
		{"simulate snapshot", "--snapshot", "--snapshot" + generic},
		{"simulate compare, its own message", "--compare", `--compare "": no setting`},
		{"simulate output, its own message", "--output", `--output: "" is not text or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runSimulate(tc.flag, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
	t.Run("simulate gpu-policy with the experiment", func(t *testing.T) {
		_, err := runSimulate("--trace", "../../sim/testdata/alibaba", "--gpu-experiment", "--gpu-policy", "")
		if want := "--gpu-policy" + generic; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want %q", err, want)
		}
	})
	for _, tc := range []struct {
		name, flag, want string
	}{
		{"scheduler history-label", "--history-label", "--history-label" + generic},
		{"scheduler history-tail", "--history-tail", "--history-tail" + generic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute("scheduler", "--kubeconfig", "/nonexistent", tc.flag, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
	for _, tc := range []struct {
		name, flag, want string
	}{
		{"whatif gpu-model", "--gpu-model", "--gpu-model" + generic},
		{"whatif trace", "--trace", "--trace" + generic},
		{"whatif snapshot", "--snapshot", "--snapshot" + generic},
		{"whatif history-label", "--history-label", "--history-label" + generic},
		{"whatif history-tail", "--history-tail", "--history-tail" + generic},
		{"whatif output, its own message", "--output", `--output: "" is not text or json`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runWhatIf(t, urgentPod, tc.flag, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
}
