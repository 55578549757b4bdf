package main

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainOverHTTPS: explain reaches a scheduler's HTTPS port with a
// bearer token, verifying its certificate against --certificate-authority
// or not at all with --insecure-skip-tls-verify, and refuses an
// unverified certificate otherwise.
func TestExplainOverHTTPS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintln(w, "Unauthorized")
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ready: waiting in activeQ")
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		return execute(append([]string{"explain", "default/web-0", "--address", srv.URL}, args...)...)
	}
	if out, err := run("--token", "s3cret", "--certificate-authority", ca); err != nil || out != "ready: waiting in activeQ\n" {
		t.Fatalf("with the CA: %q, %v", out, err)
	}
	if out, err := run("--token", "s3cret", "--insecure-skip-tls-verify"); err != nil || out != "ready: waiting in activeQ\n" {
		t.Fatalf("unverified: %q, %v", out, err)
	}
	if _, err := run("--token", "s3cret"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("an unknown certificate must be refused: %v", err)
	}
	if _, err := run("--insecure-skip-tls-verify"); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("without the token: %v", err)
	}
	if _, err := run("--certificate-authority", "/no/such/ca.pem"); err == nil || !strings.Contains(err.Error(), "--certificate-authority") {
		t.Fatalf("missing CA file: %v", err)
	}
}

// TestExplainTokenNotRedirected: a redirect from the scheduler's HTTPS
// port is not followed, so the bearer token never reaches the address it
// points to; explain fails on the redirect instead.
func TestExplainTokenNotRedirected(t *testing.T) {
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked = append(leaked, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ready: waiting in activeQ")
	}))
	defer other.Close()
	srv := httptest.NewTLSServer(http.RedirectHandler(other.URL+"/debug/queue/default/web-0", http.StatusFound))
	defer srv.Close()
	for _, cmd := range [][]string{
		{"explain", "default/web-0"},
		{"pending"},
	} {
		_, err := execute(append(cmd, "--address", srv.URL, "--token", "s3cret", "--insecure-skip-tls-verify")...)
		if err == nil {
			t.Errorf("%s: a redirect was followed", cmd[0])
		}
	}
	if len(leaked) > 0 {
		t.Fatalf("the token reached the redirect's target: %q", leaked)
	}
}

// TestPlainHTTPToTheHTTPSPort: explain and pending at host:port (plain
// HTTP) of a scheduler that serves HTTPS there, as deploy/schedq.yaml's
// does, fail saying to give an https:// address, not asking whether it
// is a schedq scheduler.
func TestPlainHTTPToTheHTTPSPort(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "https://")
	want := fmt.Sprintf("--address %s: the scheduler serves HTTPS there, and this is plain HTTP: give --address https://%s", addr, addr)
	for _, args := range [][]string{{"explain", "default/web-0"}, {"pending"}} {
		t.Run(args[0], func(t *testing.T) {
			out, err := execute(append(args, "--address", addr)...)
			if err == nil || !strings.HasPrefix(err.Error(), want) || out != "" {
				t.Errorf("out %q, err %v; want no output and an error starting %q", out, err, want)
			}
		})
	}
}

// TestAnswerOverTheLimit: an answer larger than the client reads (a
// listing of many pods with long reasons) is an error that says so and
// suggests a smaller page, not a truncated page taken for another
// server's.
func TestAnswerOverTheLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"items": [%q]}`, strings.Repeat("x", 9<<20))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	out, err := execute("pending", "-o", "json", "--address", addr)
	want := fmt.Sprintf("the answer of %s is larger than 8 MiB: ask for fewer pods (--limit)", addr)
	if err == nil || err.Error() != want || out != "" {
		t.Errorf("out of %d bytes, err %v; want %q", len(out), err, want)
	}
}

// TestRejectedToken: a 401 to a request that carried a token says the
// token was refused, not to pass one.
func TestRejectedToken(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, tc := range []struct{ name, token, want string }{
		{"no token", "", "not authenticated: pass --token"},
		{"expired token", "old", "not authenticated: the API server did not accept --token (expired, or not a token it knows)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"pending", "--address", srv.URL, "--insecure-skip-tls-verify"}
			if tc.token != "" {
				args = append(args, "--token", tc.token)
			}
			if _, err := execute(args...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNoAnswerInTime: a scheduler that takes the connection but does not
// answer within --timeout is reported as such, not as unreachable; a bad
// --timeout is refused before anything is sent.
func TestNoAnswerInTime(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, args := range [][]string{{"explain", "default/web-0"}, {"pending"}} {
		t.Run(args[0], func(t *testing.T) {
			_, err := execute(append(args, "--address", addr, "--timeout", "50ms")...)
			want := fmt.Sprintf("scheduler at %s: no answer within 50ms (--timeout)", addr)
			if err == nil || err.Error() != want {
				t.Errorf("err %v, want %q", err, want)
			}
			_, err = execute(append(args, "--address", addr, "--timeout", "0s")...)
			if err == nil || !strings.Contains(err.Error(), "--timeout: must be positive, got 0s") {
				t.Errorf("--timeout 0s: err %v", err)
			}
		})
	}
}
