package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
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
		{[]string{"scheduler", "--kubeconfig", "x", "--upstream-plugins=false"}, "--upstream-plugins=false: schedq's own plugins were removed"},
		{[]string{"scheduler", "--kubeconfig", "x", "--scoring", "balanced"}, "--scoring: removed with schedq's own plugins"},
		{[]string{"scheduler", "--log-level", "loud"}, `--log-level: "loud"`},
		{[]string{"scheduler", "--scheduler-name", ""}, "--scheduler-name: must not be empty"},
		{[]string{"explain", "no-slash"}, `"no-slash" is not NAMESPACE/NAME`},
		{[]string{"explain", "Team A/web-0", "--address", "127.0.0.1:1"}, `"Team A/web-0": "Team A" is not a namespace name`},
		{[]string{"explain", "default/Web_0", "--address", "127.0.0.1:1"}, `"default/Web_0": "Web_0" is not a pod name`},
		{[]string{"explain", "ns/p", "--address", "https://127.0.0.1:1", "--insecure-skip-tls-verify", "--certificate-authority", "/no/ca.pem"}, "--insecure-skip-tls-verify, --certificate-authority /no/ca.pem: give one"},
		{[]string{"pending", "--address", "https://127.0.0.1:1", "--insecure-skip-tls-verify", "--certificate-authority", "/no/ca.pem"}, "--insecure-skip-tls-verify, --certificate-authority /no/ca.pem: give one"},
		{[]string{"pending", "--namespace", "Team A", "--address", "127.0.0.1:1"}, `--namespace: "Team A" is not a namespace name`},
		{[]string{"explain", "ns/p", "--address", "127.0.0.1:1"}, "scheduler at 127.0.0.1:1 is not reachable"},
		{[]string{"explain", "ns/p", "-o", "yaml"}, `--output: "yaml"`},
		{[]string{"explain", "ns/p", "--address", ""}, "--address: empty; give the scheduler's host:port or URL"},
		{[]string{"explain", "ns/p", "--address", "ftp://127.0.0.1:1"}, `--address "ftp://127.0.0.1:1": the scheme must be http or https, not ftp`},
		{[]string{"explain", "ns/p", "--address", "http://"}, `--address "http://": no host`},
		{[]string{"pending", "--address", ""}, "--address: empty"},
		{[]string{"pending", "--address", "::nonsense"}, `--address "::nonsense": not host:port nor a URL`},
		{[]string{"pending", "--address", "https:///debug"}, `--address "https:///debug": no host`},
		// The request's path and query are appended to the address: one of
		// its own would make a URL that is not the scheduler's.
		{[]string{"explain", "ns/p", "--address", "http://127.0.0.1:1/x?y=1"}, `--address "http://127.0.0.1:1/x?y=1": a query (?y=1) has no place in it`},
		{[]string{"pending", "--address", "http://127.0.0.1:1#top"}, `--address "http://127.0.0.1:1#top": a fragment (#top) has no place in it`},
		{[]string{"pending", "--address", "https://me:secret@127.0.0.1:1"}, `--address: a user and password have no place in it; give --token`},
		{[]string{"explain", "ns/p", "--address", "10.0.0.1:10351", "--token", "secret"}, "--token: sent only over HTTPS, and --address 10.0.0.1:10351 is plain HTTP"},
		{[]string{"pending", "--address", "http://10.0.0.1:10351", "--token", "secret"}, "--token: sent only over HTTPS, and --address http://10.0.0.1:10351 is plain HTTP"},
		{[]string{"explain", "ns/p", "--address", "127.0.0.1:1", "--certificate-authority", "/no/ca.pem"}, "--certificate-authority: only for HTTPS, and --address 127.0.0.1:1 is plain HTTP"},
		{[]string{"pending", "--address", "http://127.0.0.1:1", "--insecure-skip-tls-verify"}, "--insecure-skip-tls-verify: only for HTTPS, and --address http://127.0.0.1:1 is plain HTTP"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		// A command without subcommands given an argument: cobra's
		// "unknown command" misled; the flag a scenario's name was meant
		// for is named.
		{[]string{"simulate", "NodeArrival"}, `simulate takes no arguments, got "NodeArrival" (a scenario is given as --scenario NodeArrival)`},
		{[]string{"whatif", "-f", "pods.yaml", "EarlyRetry"}, `whatif takes no arguments, got "EarlyRetry" (a scenario is given as --scenario EarlyRetry)`},
		{[]string{"simulate", "a.yaml", "b"}, `simulate takes no arguments, got "a.yaml", "b" (see schedq simulate --help)`},
		{[]string{"pending", "team-a"}, `pending takes no arguments, got "team-a" (see schedq pending --help)`},
		{[]string{"scheduler", "schedq"}, `scheduler takes no arguments, got "schedq" (see schedq scheduler --help)`},
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

func TestSimulate(t *testing.T) {
	run := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		root := newRoot(&out, &errOut)
		root.SetArgs(append([]string{"simulate", "--progress=off"}, args...))
		err := root.Execute()
		return out.String(), err
	}
	out, err := run("--list")
	if err != nil || !strings.Contains(out, "NodeArrival") || !strings.Contains(out, "SchedulingBasic") {
		t.Fatalf("--list: %v\n%s", err, out)
	}
	a, err := run("--scenario", "PriorityPressure", "--no-wall")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := run("--scenario", "PriorityPressure", "--no-wall")
	if a != b || !strings.Contains(a, "300 scheduled, 100 pending, of 400") {
		t.Fatalf("two runs differ or wrong:\n%s\n%s", a, b)
	}
	js, err := run("--scenario", "PriorityPressure", "-o", "json", "--no-wall")
	if err != nil || !strings.Contains(js, `"scheduled": 300`) || strings.Contains(js, `"wall"`) {
		t.Fatalf("json: %v\n%s", err, js)
	}
	cmp, err := run("--scenario", "EarlyRetry", "--compare", "popFromBackoff=false")
	if err != nil || !strings.Contains(cmp, "popFromBackoff=false") || !strings.Contains(cmp, "baseline") {
		t.Fatalf("compare: %v\n%s", err, cmp)
	}
	report := t.TempDir() + "/r.html"
	if _, err := run("--scenario", "PriorityPressure", "--report", report); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "Nope"}, `unknown scenario "Nope"`},
		{[]string{"--compare", "speed=fast"}, `unknown setting "speed"`},
		{[]string{"--compare", "hints"}, `"hints" is not key=value`},
		{[]string{"-o", "xml"}, `--output: "xml"`},
		{[]string{"--report", "/no/such/dir/r.html", "--scenario", "PriorityPressure"}, "--report"},
	} {
		if _, err := run(bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want %q", bad.args, err, bad.want)
		}
	}
}

// fullWriter fails every write, as stdout on a full disk does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestOutputWriteErrorFails: when the results cannot be written, the
// command fails, whatever the format.
func TestOutputWriteErrorFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"simulate text", []string{"simulate", "--progress=off", "--scenario", "EarlyRetry"}},
		{"simulate compare", []string{"simulate", "--progress=off", "--scenario", "EarlyRetry", "--compare", "hints=false"}},
		{"simulate json", []string{"simulate", "--progress=off", "--scenario", "EarlyRetry", "-o", "json"}},
		{"simulate list", []string{"simulate", "--list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := runCLI(tc.args, fullWriter{}, &stderr)
			if err == nil || !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("error %v, want the write's", err)
			}
		})
	}
}

// TestSchedulerChecksEveryFlagFirst: schedq scheduler reports every bad
// flag at once, --log-level and --log-format with the others, and reads
// or creates no file for a refused command line: the history file (which
// does not parse here) is loaded only when every flag passed. The log
// flags were checked after the others, alone, and after the history file
// was loaded and a file created in its directory.
func TestSchedulerChecksEveryFlagFirst(t *testing.T) {
	dir := t.TempDir()
	history := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(history, []byte("not the history's header\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"scheduler", "--kubeconfig", "/no/such/kubeconfig", "--leader-elect=false", "--history-file", history}
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		notWant string
	}{
		{name: "log level with another flag", args: []string{"--log-level", "loud", "--kube-api-qps", "0"},
			want: []string{`--log-level: "loud"`, "--kube-api-qps: must be more than 0"}, notWant: history},
		{name: "log format with another flag", args: []string{"--log-format", "xml", "--kube-api-burst", "0"},
			want: []string{`--log-format: "xml"`, "--kube-api-burst: must be more than 0"}, notWant: history},
		{name: "both log flags", args: []string{"--log-level", "loud", "--log-format", "xml"},
			want: []string{`--log-level: "loud"`, `--log-format: "xml"`}, notWant: history},
		{name: "good flags: the history file is loaded", args: nil,
			want: []string{"--history-file: " + history}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := executeErr(append(slices.Clone(base), tc.args...)...)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err %q, want it to contain %q", err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("err %q: the history file was loaded before the flags were all checked", err)
			}
		})
	}
}
