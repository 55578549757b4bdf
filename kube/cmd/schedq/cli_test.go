package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
)

// execute runs the command line args and returns its output and error.
func execute(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	root := newRoot(&out, &errOut)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// apiServer is a stand-in API server that counts the requests it gets and
// fails them all, so that a scheduler pointed at it stops at once.
func apiServer(t *testing.T) (url string, hits *atomic.Int32) {
	t.Helper()
	hits = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "stand-in API server", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, hits
}

// kubeconfigFor writes a kubeconfig for server into a temporary file.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// notInCluster makes the in-cluster configuration unavailable and
// $KUBECONFIG empty, whatever the machine running the tests has.
func notInCluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", "")
}

// TestSchedulerFlagsCheckedBeforeConnecting: a bad flag is an error that
// names it, and the API server is never contacted; with good flags it is.
func TestSchedulerFlagsCheckedBeforeConnecting(t *testing.T) {
	notInCluster(t)
	server, hits := apiServer(t)
	kc := kubeconfigFor(t, server)
	base := []string{"scheduler", "--kubeconfig", kc, "--leader-elect=false", "--address="}
	missing := filepath.Join(t.TempDir(), "missing")
	// --cert-dir: one with half a pair, one with a pair that does not load.
	halfPair, badPair := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(halfPair, "schedq.crt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(badPair, "schedq.crt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(badPair, "schedq.key"), []byte("x"), 0o600)
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--percentage-of-nodes-to-score", "200"}, "--percentage-of-nodes-to-score: 200 is not between 0 and 100"},
		{[]string{"--percentage-of-nodes-to-score", "-5"}, "--percentage-of-nodes-to-score: -5"},
		{[]string{"--kube-api-qps", "-1"}, "--kube-api-qps: must be more than 0"},
		{[]string{"--kube-api-qps", "0"}, "--kube-api-qps: must be more than 0"},
		{[]string{"--kube-api-burst", "0"}, "--kube-api-burst: must be more than 0"},
		{[]string{"--address", "nonsense"}, `--address: "nonsense": not host:port`},
		{[]string{"--address", "127.0.0.1:99999"}, `--address: "127.0.0.1:99999": port`},
		{[]string{"--scheduler-name", ""}, "--scheduler-name: must not be empty"},
		{[]string{"--scheduler-name", "Not_A_Name"}, "--scheduler-name"},
		{[]string{"--upstream-plugins=false"}, "--upstream-plugins=false: schedq's own plugins were removed; schedq runs kube-scheduler v1.37.2's framework and plugins: configure them with --config"},
		{[]string{"--scoring", "balanced"}, "--scoring: removed with schedq's own plugins: set NodeResourcesFit's scoringStrategy"},
		{[]string{"--log-level", "loud"}, `--log-level: "loud"`},
		{[]string{"--log-format", "xml"}, `--log-format: "xml"`},
		{[]string{"--leader-elect-retry-period", "-2s"}, "--leader-elect-retry-period: must be positive"},
		{[]string{"--leader-elect=true", "--leader-elect-lease-duration", "5s"}, "--leader-elect-lease-duration: 5s must be longer than --leader-elect-renew-deadline (10s)"},
		{[]string{"--leader-elect=true", "--leader-elect-resource-namespace", "Kube System"}, "--leader-elect-resource-namespace"},
		{[]string{"--leader-elect=true", "--leader-elect-resource-name", ""}, "--leader-elect-resource-name"},
		{[]string{"--kube-api-qps", "fast"}, `invalid argument "fast" for "--kube-api-qps"`},
		{[]string{"--fair-namespaces", "--fair-namespace-weights", "Team A=2"}, `--fair-namespace-weights: "Team A" is not a namespace name`},
		{[]string{"--fair-namespaces", "--fair-namespace-weights", "a=1,a=2"}, "--fair-namespace-weights: a is listed twice"},
		{[]string{"--fair-namespaces", "--fair-namespace-weights", "a=1", "--fair-namespace-weights", "a=2"}, "--fair-namespace-weights: a is listed twice"},
		{[]string{"--fair-namespace-weights", "a=2", "--fair-namespace-weights", "b=0"}, "--fair-namespace-weights: b=0: a weight is a number above 0"},
		{[]string{"--address", "127.0.0.1:10351"}, "--address 127.0.0.1:10351 and --secure-port 10351 (on --bind-address 0.0.0.0) listen on one port"},
		{[]string{"--address", "localhost:8443", "--secure-port", "8443", "--bind-address", "127.0.0.1"}, "--address localhost:8443 and --secure-port 8443 (on --bind-address 127.0.0.1) listen on one port"},
		{[]string{"--secure-port", "-5"}, "--secure-port: -5 is not a port from 1 to 65535 (0: off)"},
		{[]string{"--secure-port", "99999"}, "--secure-port: 99999 is not a port from 1 to 65535 (0: off)"},
		{[]string{"--tls-cert-file", missing, "--tls-private-key-file", missing}, `--tls-cert-file "` + missing + `", --tls-private-key-file "` + missing + `": open ` + missing},
		{[]string{"--authentication-kubeconfig", missing}, "--authentication-kubeconfig: stat " + missing},
		{[]string{"--authorization-kubeconfig", missing}, "--authorization-kubeconfig: stat " + missing},
		{[]string{"--client-ca-file", missing}, "--client-ca-file: stat " + missing},
		{[]string{"--history-file", "/proc/history.jsonl"}, "--history-file: /proc/history.jsonl: the directory /proc: no file can be created in it"},
		// Files of the HTTPS port read only once it starts, after the API
		// server was contacted: they must be what they are named for.
		{[]string{"--client-ca-file", kc}, "--client-ca-file " + kc + ": no PEM certificate in it"},
		{[]string{"--requestheader-client-ca-file", empty}, "--requestheader-client-ca-file " + empty + ": no PEM certificate in it"},
		{[]string{"--authentication-kubeconfig", empty}, "--authentication-kubeconfig " + empty + ": invalid configuration: no configuration has been provided"},
		{[]string{"--authorization-kubeconfig", empty}, "--authorization-kubeconfig " + empty + ": invalid configuration: no configuration has been provided"},
		// --cert-dir, read or written only once the HTTPS port starts,
		// after the API server was contacted.
		{[]string{"--cert-dir", kc}, "--cert-dir " + kc + ": not a directory"},
		{[]string{"--cert-dir", "/proc/schedq-certs"}, "--cert-dir /proc/schedq-certs: the self-signed certificate cannot be written: no file can be created in /proc"},
		{[]string{"--cert-dir", halfPair}, "--cert-dir " + halfPair + ": " + filepath.Join(halfPair, "schedq.crt") + " without " + filepath.Join(halfPair, "schedq.key")},
		{[]string{"--cert-dir", badPair}, "--cert-dir " + badPair + ": " + filepath.Join(badPair, "schedq.crt") + ", " + filepath.Join(badPair, "schedq.key") + ": tls: failed to find any PEM data"},
		// The TLS settings the HTTPS port reads only once it starts,
		// after the API server was contacted.
		{[]string{"--tls-min-version", "VersionTLS99"}, `--tls-min-version: unknown tls version "VersionTLS99"`},
		{[]string{"--tls-cipher-suites", "TLS_NONSENSE"}, "--tls-cipher-suites: Cipher suite TLS_NONSENSE not supported"},
		{[]string{"--tls-curve-preferences", "0"}, "--tls-curve-preferences: curve preference 0 is out of range"},
		{[]string{"--tls-sni-cert-key", missing + "," + missing}, "--tls-sni-cert-key " + missing + "," + missing + ": open " + missing},
		// Out of range, and accepted until now.
		{[]string{"--kube-api-qps", "Inf"}, "--kube-api-qps: must be a finite number, got +Inf"},
		{[]string{"--http2-max-streams-per-connection", "-1"}, "--http2-max-streams-per-connection: must not be negative, got -1 (0: Go's default)"},
		{[]string{"--authentication-token-webhook-cache-ttl", "-1s"}, "--authentication-token-webhook-cache-ttl: must not be negative, got -1s"},
		{[]string{"--authorization-webhook-cache-authorized-ttl", "-1s", "--authorization-webhook-cache-unauthorized-ttl", "-2s"},
			"--authorization-webhook-cache-authorized-ttl: must not be negative, got -1s\n--authorization-webhook-cache-unauthorized-ttl: must not be negative, got -2s"},
		{[]string{"--tls-private-key-file", kc}, "--tls-private-key-file: needs --tls-cert-file, the certificate of the key"},
		{[]string{"--tls-cert-file", kc}, "--tls-cert-file: needs --tls-private-key-file, the key of the certificate"},
		{[]string{"--cert-dir", missing, "--tls-cert-file", kc, "--tls-private-key-file", kc}, "--cert-dir: not with --tls-cert-file and --tls-private-key-file, which give the certificate: it would be ignored"},
		// Flags of the HTTPS port, which is off: they would do nothing.
		{[]string{"--secure-port", "0", "--tls-min-version", "VersionTLS13"}, "--tls-min-version: only with the HTTPS port on, and --secure-port=0 turns it off"},
		{[]string{"--secure-port=0", "--bind-address", "10.0.0.1", "--client-ca-file", kc}, "--bind-address, --client-ca-file: only with the HTTPS port on"},
		// Flags of leader election, which is off: they would do nothing.
		{[]string{"--leader-elect-identity", "me"}, "--leader-elect-identity: only with leader election on, and --leader-elect=false turns it off"},
		{[]string{"--leader-elect-resource-name", "other", "--leader-elect-lease-duration", "30s"}, "--leader-elect-lease-duration, --leader-elect-resource-name: only with leader election on"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := execute(append(append([]string{}, base...), tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the API server got %d requests before the flags were checked", n)
			}
		})
	}
	// --config's profile and the flags it replaces: a conflict is refused.
	cfgDir := t.TempDir()
	noName, named := filepath.Join(cfgDir, "no-name.yaml"), filepath.Join(cfgDir, "named.yaml")
	const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	os.WriteFile(noName, []byte(header+"profiles: [{plugins: {}}]\n"), 0o600)
	os.WriteFile(named, []byte(header+"profiles: [{schedulerName: schedq, percentageOfNodesToScore: 30}]\n"), 0o600)
	wrongPoint := filepath.Join(cfgDir, "wrong-point.yaml")
	os.WriteFile(wrongPoint, []byte(header+"profiles: [{schedulerName: schedq, plugins: {filter: {enabled: [{name: ImageLocality}]}}}]\n"), 0o600)
	// schedq's own settings in the file (its Schedq args).
	settings, badSettings := filepath.Join(cfgDir, "settings.yaml"), filepath.Join(cfgDir, "bad-settings.yaml")
	os.WriteFile(settings, []byte(header+"profiles: [{schedulerName: schedq, pluginConfig: [{name: Schedq, args: {wakeBudget: false, fairness: {namespaces: true, halfLife: 2m}}}]}]\n"), 0o600)
	os.WriteFile(badSettings, []byte(header+"profiles: [{schedulerName: schedq, pluginConfig: [{name: Schedq, args: {fairness: {halfLife: soon, namespace: true}}}]}]\n"), 0o600)
	os.WriteFile(settings+"-fence", []byte(header+"profiles: [{schedulerName: schedq, pluginConfig: [{name: Schedq, args: {fenceMargin: 3s}}]}]\n"), 0o600)
	const at = "profiles[0].pluginConfig[0].args"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"flag name, file without one", []string{"--config", noName, "--scheduler-name", "schedq"}, "--scheduler-name schedq: with --config the profiles' schedulerNames decide, and " + noName + "'s first is default-scheduler"},
		{"flag name, file's other", []string{"--config", named, "--scheduler-name", "other"}, "--scheduler-name other: with --config the profiles' schedulerNames decide, and " + named + "'s first is schedq"},
		{"flag percentage, file's other", []string{"--config", named, "--percentage-of-nodes-to-score", "50"}, "--percentage-of-nodes-to-score 50: with --config the file decides, and " + named + "'s is 30"},
		{"plugin at a point it does not extend", []string{"--config", wrongPoint}, "--config " + wrongPoint + `: profile "schedq": plugin "ImageLocality" does not extend FilterPlugin plugin`},
		{"bad Schedq args", []string{"--config", badSettings}, "--config: " + badSettings + ": [" + at + `.fairness.namespace: Not found: "namespace": unknown field`},
		{"bad Schedq duration", []string{"--config", badSettings}, at + `.fairness.halfLife: Invalid value: "soon": not a duration`},
		{"flag against the file's setting", []string{"--config", settings, "--fair-half-life", "1m"}, "--fair-half-life=1m0s: --config " + settings + ": " + at + ".fairness.halfLife is 2m0s; give it in one place"},
		{"flag against the file's wake budget", []string{"--config", settings, "--no-wake-budget=false"}, "--no-wake-budget=false: --config " + settings + ": " + at + ".wakeBudget is false; give it in one place"},
		{"fence margin in the file, leader election off", []string{"--config", settings + "-fence"}, at + ".fenceMargin: only with leader election on, and --leader-elect=false turns it off"},
		// Every problem at once: a conflict with the file is reported
		// with the other flags' errors, not after they are fixed.
		{"a bad flag and a conflict with the file", []string{"--config", settings, "--fair-half-life", "1m", "--kube-api-qps", "0"},
			"--kube-api-qps: must be more than 0, got 0\n--fair-half-life=1m0s: --config " + settings + ": " + at + ".fairness.halfLife is 2m0s; give it in one place"},
		{"a bad log level and a conflict with the profile", []string{"--config", named, "--scheduler-name", "other", "--log-level", "loud"},
			"--scheduler-name other: with --config the profiles' schedulerNames decide, and " + named + "'s first is schedq (kube-scheduler's default-scheduler if the profile sets none); set it in the file only\n--log-level: \"loud\" is not debug, info, warn or error"},
		{"a removed flag and a conflict with the file", []string{"--config", settings, "--no-wake-budget=false", "--scoring", "balanced"},
			"--scoring: removed with schedq's own plugins: set NodeResourcesFit's scoringStrategy (or the weight of NodeResourcesBalancedAllocation) in the profile of --config (a KubeSchedulerConfiguration)\n--no-wake-budget=false: --config " + settings},
		// A file that fails applies nothing: no conflict is made up
		// against the schedulerName it would have given.
		{"a failing file and a flag", []string{"--config", badSettings, "--scheduler-name", "other"}, "--config: " + badSettings + ": [" + at + `.fairness.namespace: Not found: "namespace": unknown field`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := execute(append(append([]string{}, base...), tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the API server got %d requests before the flags were checked", n)
			}
		})
	}
	// A file that fails is reported alone, with no conflict made up
	// against the schedulerName it would have given.
	if _, err := execute(append(append([]string{}, base...), "--config", badSettings, "--scheduler-name", "other")...); err == nil || strings.Contains(err.Error(), "--scheduler-name") {
		t.Fatalf("a failing file: err %v, want its error and no conflict of --scheduler-name", err)
	}
	// The same command line with good flags does contact it, as does one
	// whose flags repeat the file's values.
	for _, good := range [][]string{nil, {"--config", named, "--scheduler-name", "schedq", "--percentage-of-nodes-to-score", "30"},
		{"--config", settings}, {"--config", settings, "--no-wake-budget", "--fair-namespaces", "--fair-half-life", "2m"},
		{"--no-wake-budget", "--fair-namespaces", "--fair-namespace-weights", "a=2", "--fair-half-life", "2m", "--history-label", "app", "--history-tail", "exponential", "--stall-timeout", "3m"},
		{"--address", "127.0.0.1:10351", "--secure-port", "0"}, {"--address", "127.0.0.1:10351", "--bind-address", "10.0.0.1"},
		{"--cert-dir", filepath.Join(t.TempDir(), "new", "certs")}} {
		before := hits.Load()
		_, err := execute(append(append([]string{}, base...), good...)...)
		if err == nil || !strings.Contains(err.Error(), "API server "+server+" is not reachable") || hits.Load() == before {
			t.Fatalf("good flags %v: err %v, %d requests; want the stand-in contacted", good, err, hits.Load()-before)
		}
	}
}

// TestSchedulerKubeconfigPrecedence: --kubeconfig, then $KUBECONFIG (a
// path list whose missing files are skipped), as kubectl does. Which
// stand-in API server gets the requests shows which configuration won.
func TestSchedulerKubeconfigPrecedence(t *testing.T) {
	notInCluster(t)
	flagURL, flagHits := apiServer(t)
	envURL, envHits := apiServer(t)
	flagKC, envKC := kubeconfigFor(t, flagURL), kubeconfigFor(t, envURL)
	missing := filepath.Join(t.TempDir(), "missing")
	list := func(paths ...string) string { return strings.Join(paths, string(filepath.ListSeparator)) }
	tests := []struct {
		name, flag, env string
		want            string // the stand-in that must get the requests
		wantErr         string
	}{
		{"KUBECONFIG", "", envKC, envURL, ""},
		{"KUBECONFIG list with a missing file", "", list(missing, envKC), envURL, ""},
		{"--kubeconfig beats KUBECONFIG", flagKC, envKC, flagURL, ""},
		{"missing --kubeconfig", missing, envKC, "", "--kubeconfig " + missing},
		{"KUBECONFIG with no file", "", missing, "", "no cluster configuration in $KUBECONFIG (" + missing + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			flagHits.Store(0)
			envHits.Store(0)
			args := []string{"scheduler", "--leader-elect=false", "--address="}
			if tc.flag != "" {
				args = append(args, "--kubeconfig", tc.flag)
			}
			_, err := execute(args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				if flagHits.Load()+envHits.Load() != 0 {
					t.Fatal("a stand-in API server was contacted")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "API server "+tc.want+" is not reachable") {
				t.Fatalf("err %v, want the stand-in at %s contacted", err, tc.want)
			}
			if got := map[string]int32{flagURL: flagHits.Load(), envURL: envHits.Load()}; got[tc.want] == 0 || got[flagURL]+got[envURL] != got[tc.want] {
				t.Fatalf("requests per stand-in %v, want only %s", got, tc.want)
			}
		})
	}
}

// TestExplainAnswers: explain prints schedq's answers, passes on schedq's
// own errors, and recognises any other answer as not schedq's: it names
// the status and address, and never prints the page or an empty error.
func TestExplainAnswers(t *testing.T) {
	const notQueued = "pod default/web-0 is not in schedq's queue: it is unknown, bound, or not ours"
	respond := func(status int, ctype, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}
	}
	html := "<!DOCTYPE html><html><body><h1>Internal Server Error</h1></body></html>"
	tests := []struct {
		name    string
		handler http.Handler
		args    []string
		wantOut string
		wantErr string // ADDR stands for the server's address
	}{
		{"text answer", respond(200, "text/plain; charset=utf-8", "ready: waiting in activeQ\n"), nil, "ready: waiting in activeQ\n", ""},
		{"json answer", respond(200, "application/json", `{"key": "default/web-0"}`), []string{"-o", "json"}, `{"key": "default/web-0"}`, ""},
		{"schedq's 404", respond(404, "text/plain; charset=utf-8", notQueued+"\n"), nil, "", notQueued},
		{"plain 404 of another server", http.NotFoundHandler(), nil, "", "HTTP 404 from ADDR: is this a schedq scheduler?"},
		{"empty 404", respond(404, "", ""), nil, "", "HTTP 404 from ADDR: is this a schedq scheduler?"},
		{"HTML 500", respond(500, "text/html", html), nil, "", "HTTP 500 from ADDR: is this a schedq scheduler?"},
		{"empty 500", respond(500, "", ""), nil, "", "HTTP 500 from ADDR: is this a schedq scheduler?"},
		{"one-line 500", respond(500, "text/plain", "queue closed\n"), nil, "", "HTTP 500 from ADDR: queue closed"},
		{"HTML 200", respond(200, "text/html", html), nil, "", "HTTP 200 from ADDR: is this a schedq scheduler?"},
		{"empty 200", respond(200, "text/plain", ""), nil, "", "HTTP 200 from ADDR: is this a schedq scheduler?"},
		{"text 200 for json", respond(200, "text/plain", "hello"), []string{"-o", "json"}, "", "HTTP 200 from ADDR: is this a schedq scheduler?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			addr := strings.TrimPrefix(srv.URL, "http://")
			out, err := execute(append([]string{"explain", "default/web-0", "--address", addr}, tc.args...)...)
			if tc.wantErr == "" {
				if err != nil || out != tc.wantOut {
					t.Fatalf("out %q, err %v; want %q", out, err, tc.wantOut)
				}
				return
			}
			want := strings.ReplaceAll(tc.wantErr, "ADDR", addr)
			if err == nil || err.Error() != want {
				t.Fatalf("err %v, want %q", err, want)
			}
			if out != "" {
				t.Fatalf("printed %q on error", out)
			}
		})
	}
}

// TestVersion: --version works on the root and on every subcommand, and
// prints this binary's build information.
func TestVersion(t *testing.T) {
	want := version(debug.ReadBuildInfo())
	if !strings.HasPrefix(want, "schedq ") {
		t.Fatalf("version %q", want)
	}
	cmds := [][]string{{}}
	for _, c := range newRoot(&bytes.Buffer{}, &bytes.Buffer{}).Commands() {
		cmds = append(cmds, []string{c.Name()})
	}
	if len(cmds) < 4 {
		t.Fatalf("subcommands %v", cmds)
	}
	for _, c := range cmds {
		out, err := execute(append(c, "--version")...)
		if err != nil || out != want+"\n" {
			t.Errorf("%v --version: %q, %v; want %q", c, out, err, want)
		}
	}
	// explain takes an argument; --version needs none.
	if out, err := execute("explain", "--version"); err != nil || out != want+"\n" {
		t.Errorf("explain --version: %q, %v", out, err)
	}
}

// TestVersionAlone: --version prints the version and runs nothing, so
// an argument or another flag beside it, which it would ignore, is
// refused, naming it, and nothing is printed.
func TestVersionAlone(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"an argument", []string{"--version", "extra"}, `unknown command "extra" for "schedq"`},
		{"a flag of the run", []string{"simulate", "--version", "--scenario", "x.yaml"}, "--version: prints the version and runs nothing; not with --scenario"},
		{"short, with flags", []string{"pending", "-v", "--limit", "5", "-o", "json"}, "--version: prints the version and runs nothing; not with --limit, --output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
				t.Errorf("out %q, err %v; want no output and an error containing %q", out, err, tc.want)
			}
		})
	}
}

// TestUnknownHelpTopicOrShell: help for a command that does not exist,
// and completion for a shell it does not know, are errors, not a usage
// page and success.
func TestUnknownHelpTopicOrShell(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"help topic", []string{"help", "bogus"}, `help bogus: no such command (see schedq help)`},
		{"help of an argument", []string{"help", "simulate", "bogus"}, `help simulate bogus: no such command (see schedq help)`},
		{"completion shell", []string{"completion", "tcsh"}, `unknown command "tcsh" for "schedq completion"`},
		{"completion without a shell", []string{"completion"}, "completion: name a shell: bash, fish, powershell or zsh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) || out != "" {
				t.Errorf("out %q, err %v; want no output and an error containing %q", out, err, tc.want)
			}
		})
	}
	if out, err := execute("help", "simulate"); err != nil || !strings.Contains(out, "schedq simulate [flags]") {
		t.Errorf("help simulate: %q, %v", out, err)
	}
	if out, err := execute("completion", "bash"); err != nil || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: %.100q, %v", out, err)
	}
}

func TestVersionString(t *testing.T) {
	release := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/schedq/schedq/kube", Version: "v0.3.0"},
		Deps:      []*debug.Module{{Path: "github.com/schedq/schedq", Version: "v0.3.1"}, {Path: "k8s.io/api", Version: "v0.36.3"}},
		Settings:  []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}},
	}
	devel := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/schedq/schedq/kube", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
			{Key: "vcs.revision", Value: "149ef45"}, {Key: "vcs.time", Value: "2026-11-23T08:00:00Z"}, {Key: "vcs.modified", Value: "true"}},
	}
	tests := []struct {
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{release, true, "schedq v0.3.0\n  module   github.com/schedq/schedq/kube v0.3.0\n  queue    github.com/schedq/schedq v0.3.1\n  go       go1.26.8 linux/arm64"},
		{devel, true, "schedq (devel)\n  module   github.com/schedq/schedq/kube (devel)\n  revision 149ef45 (2026-11-23T08:00:00Z), with uncommitted changes\n  go       go1.26.8 linux/amd64"},
	}
	for _, tc := range tests {
		if got := version(tc.bi, tc.ok); got != tc.want {
			t.Errorf("got\n%s\nwant\n%s", got, tc.want)
		}
	}
	if got := version(nil, false); !strings.HasPrefix(got, "schedq (no build information) go") {
		t.Errorf("no build info: %q", got)
	}
}

// TestBadSettingsExitNonZero: schedq itself (main, in a child process)
// exits 1 with the message on stderr when the --config file's schedq
// settings are bad, contradict a flag, or are the scheduler's only and
// given to the simulator.
func TestBadSettingsExitNonZero(t *testing.T) {
	if asMain() {
		return
	}
	dir := t.TempDir()
	const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	file := func(name, args string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(header+"profiles: [{schedulerName: schedq, pluginConfig: [{name: Schedq, args: "+args+"}]}]\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bad, fair, fence := file("bad.yaml", "{history: {tail: longer}}"), file("fair.yaml", "{fairness: {namespaces: true}}"), file("fence.yaml", "{fenceMargin: 3s}")
	const at = "profiles[0].pluginConfig[0].args"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad setting", []string{"scheduler", "--kubeconfig", "/no/such/kubeconfig", "--config", bad}, at + `.history.tail: Unsupported value: "longer"`},
		{"flag against the file", []string{"scheduler", "--kubeconfig", "/no/such/kubeconfig", "--config", fair, "--fair-namespaces=false"}, "--fair-namespaces=false: --config " + fair + ": " + at + ".fairness.namespaces is true"},
		{"the scheduler's only, in the simulator", []string{"simulate", "--config", fence}, at + ".fenceMargin: schedq scheduler's only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr := mainFails(t, "TestBadSettingsExitNonZero", tc.args)
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q, want schedq: ... %q", stderr, tc.want)
			}
		})
	}
}

// TestSimulateBuildsEveryProfileFirst: a profile kube-scheduler's
// framework refuses (a plugin enabled at an extension point it does not
// extend), whether --config, the scenario's scheduler.config or
// --compare config=FILE brings it, and GPUDevices' in a GPU replay,
// stops schedq simulate (main, in a
// child process) with exit status 1 before any run: nothing on stdout,
// no progress bar on stderr before the message, which names where the
// file came from and the file.
func TestSimulateBuildsEveryProfileFirst(t *testing.T) {
	if asMain() {
		return
	}
	dir := t.TempDir()
	write := writer(t, dir)
	wrong := write("wrong.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"+
		"profiles:\n- schedulerName: schedq\n  plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n")
	const tinyText = "name: tiny\nseed: 1\nnodes:\n- {name: n, count: 1, capacity: {cpu: \"4\", memory: 8Gi}}\n" +
		"pods:\n- {name: p, namespace: a, count: 2, requests: {cpu: \"1\", memory: 1Gi}}\n"
	tiny := write("tiny.yaml", tinyText)
	tinyWrong := write("tiny-wrong.yaml", tinyText+"scheduler: {config: "+wrong+"}\n")
	gpuWrong := write("gpu-wrong.yaml", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"+
		"profiles:\n- schedulerName: schedq\n  plugins:\n    permit:\n      enabled:\n      - name: GPUDevices\n")
	refused := "scheduler.config " + wrong + `: profile "schedq": plugin "ImageLocality" does not extend FilterPlugin plugin`
	gpuRefused := "scheduler.config " + gpuWrong + `: profile "schedq": plugin "GPUDevices" does not extend PermitPlugin plugin`
	const trace = "../../sim/testdata/alibaba"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"the compared file's, after a baseline that builds", []string{"--scenario", tiny, "--compare", "config=" + wrong}, "--compare config=" + wrong + ": " + refused},
		{"the compared file's, among other settings", []string{"--scenario", tiny, "--compare", "hints=false,config=" + wrong}, "--compare hints=false,config=" + wrong + ": " + refused},
		{"--config's", []string{"--scenario", tiny, "--config", wrong}, "--config: " + refused},
		{"--config's, with a --compare of no file", []string{"--scenario", tiny, "--config", wrong, "--compare", "hints=false"}, "--config: " + refused},
		{"the scenario's scheduler.config", []string{"--scenario", tinyWrong}, "scenario " + tinyWrong + ": " + refused},
		{"GPUDevices' point, in a device-model replay's comparison", []string{"--trace", trace, "--gpu-model", "device", "--compare", "config=" + gpuWrong}, "--compare config=" + gpuWrong + ": " + gpuRefused},
		{"GPUDevices' point, in a DRA-model replay per policy", []string{"--trace", trace, "--gpu-model", "dra", "--gpu-policy", "default,bestfit", "--config", gpuWrong}, "--gpu-policy default: --config: " + gpuRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr := mainFails(t, "TestSimulateBuildsEveryProfileFirst", append([]string{"simulate", "--progress=on", "--no-wall"}, tc.args...))
			if stdout != "" {
				t.Errorf("stdout %q, want nothing: no run before the error", stdout)
			}
			if want := "schedq: " + tc.want + "\n"; stderr != want {
				t.Errorf("stderr %q, want only %q (no progress bar: no run before it)", stderr, want)
			}
		})
	}
}

// asMain runs main with the arguments of SCHEDQ_TEST_MAIN_ARGS (one a
// line), if set, as the child process of mainFails, and says whether it
// did.
func asMain() bool {
	args, ok := os.LookupEnv("SCHEDQ_TEST_MAIN_ARGS")
	if ok {
		os.Args = append([]string{"schedq"}, strings.Split(args, "\n")...)
		main()
	}
	return ok
}

// mainFails runs schedq with args in a child process, the test named
// test (which begins with asMain), fails t unless it exits with status 1
// and a message beginning "schedq: " on stderr, and returns its stdout
// and stderr.
func mainFails(t *testing.T, test string, args []string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$")
	cmd.Env = append(os.Environ(), "SCHEDQ_TEST_MAIN_ARGS="+strings.Join(args, "\n"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("schedq %v: %v, want exit status 1; stderr:\n%s", args, err, errOut.String())
	}
	if !strings.HasPrefix(errOut.String(), "schedq: ") {
		t.Errorf("stderr %q, want schedq: ...", errOut.String())
	}
	return out.String(), errOut.String()
}
