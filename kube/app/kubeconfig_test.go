package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeKubeconfig writes a kubeconfig whose only cluster is server, with
// names of its own so that merged files do not overwrite each other.
func writeKubeconfig(t *testing.T, name, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c-%[1]s, cluster: {server: %[2]q}}]
users: [{name: u-%[1]s, user: {token: x}}]
contexts: [{name: %[1]s, context: {cluster: c-%[1]s, user: u-%[1]s}}]
current-context: %[1]s
`, name, server)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigPrecedence: --kubeconfig, then $KUBECONFIG (a merged list,
// missing files skipped, the first file's current context wins), then
// ~/.kube/config, as kubectl finds its configuration. Nothing falls back
// to ~/.kube/config when $KUBECONFIG is set.
func TestConfigPrecedence(t *testing.T) {
	flag := writeKubeconfig(t, "flag", "https://flag.example:6443")
	envA := writeKubeconfig(t, "a", "https://a.example:6443")
	envB := writeKubeconfig(t, "b", "https://b.example:6443")
	home := writeKubeconfig(t, "home", "https://home.example:6443")
	missing := filepath.Join(t.TempDir(), "missing")
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(broken, []byte("clusters: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	list := func(paths ...string) string { return strings.Join(paths, string(filepath.ListSeparator)) }
	tests := []struct {
		name                      string
		flag, env, home           string
		wantHost, wantErrContains string
	}{
		{"flag beats KUBECONFIG and home", flag, envA, home, "https://flag.example:6443", ""},
		{"KUBECONFIG beats home", "", envA, home, "https://a.example:6443", ""},
		{"KUBECONFIG list: first file wins", "", list(envA, envB), home, "https://a.example:6443", ""},
		{"KUBECONFIG list: missing files skipped", "", list(missing, envB), home, "https://b.example:6443", ""},
		{"home when no flag and no KUBECONFIG", "", "", home, "https://home.example:6443", ""},
		{"missing flag file", missing, envA, home, "", "--kubeconfig " + missing},
		{"KUBECONFIG all missing: no fallback to home", "", missing, home, "", "no cluster configuration in $KUBECONFIG (" + missing + ")"},
		{"nothing at all", "", "", missing, "", "no cluster configuration in " + missing + " (no --kubeconfig, no $KUBECONFIG), and not running in a cluster"},
		{"broken file", "", broken, home, "", "$KUBECONFIG (" + broken + ")"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.env)
			t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a cluster
			cfg, err := configFrom(tc.flag, tc.home)
			if tc.wantErrContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrContains) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErrContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.wantHost {
				t.Errorf("host %s, want %s", cfg.Host, tc.wantHost)
			}
		})
	}
}
