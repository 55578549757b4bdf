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
	simulate := func(_ *testing.T, flag string) (string, error) { return runSimulate(flag, "") }
	scheduler := func(_ *testing.T, flag string) (string, error) {
		return execute("scheduler", "--kubeconfig", "/nonexistent", flag, "")
	}
	whatif := func(t *testing.T, flag string) (string, error) { return runWhatIf(t, urgentPod, flag, "") }
	for _, tc := range []struct {
		name, flag, want string
		run              func(t *testing.T, flag string) (string, error)
	}{
		{"simulate gpu-policy", "--gpu-policy", "--gpu-policy" + generic, simulate},
		{"simulate gpu-model", "--gpu-model", "--gpu-model" + generic, simulate},
		{"simulate config", "--config", "--config" + generic, simulate},
		{"simulate report", "--report", "--report" + generic, simulate},
		{"simulate records", "--records", "--records" + generic, simulate},
		{"simulate series", "--series", "--series" + generic, simulate},
		{"simulate trace", "--trace", "--trace" + generic, simulate},
		{"simulate trace-pods", "--trace-pods", "--trace-pods" + generic, simulate},
		{"simulate trace-order", "--trace-order", "--trace-order" + generic, simulate},
		{"simulate snapshot", "--snapshot", "--snapshot" + generic, simulate},
		{"simulate compare, its own message", "--compare", `--compare "": no setting`, simulate},
		{"simulate output, its own message", "--output", `--output: "" is not text or json`, simulate},
		{"scheduler history-label", "--history-label", "--history-label" + generic, scheduler},
		{"scheduler history-tail", "--history-tail", "--history-tail" + generic, scheduler},
		{"whatif gpu-model", "--gpu-model", "--gpu-model" + generic, whatif},
		{"whatif trace", "--trace", "--trace" + generic, whatif},
		{"whatif snapshot", "--snapshot", "--snapshot" + generic, whatif},
		{"whatif history-label", "--history-label", "--history-label" + generic, whatif},
		{"whatif history-tail", "--history-tail", "--history-tail" + generic, whatif},
		{"whatif output, its own message", "--output", `--output: "" is not text or json`, whatif},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tc.run(t, tc.flag)
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
}
