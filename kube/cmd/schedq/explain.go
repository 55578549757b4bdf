package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedq/schedq/kube/app"
)

func explainCmd(stdout io.Writer) *cobra.Command {
	var address, output, token, caFile string
	var insecure bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "explain NAMESPACE/NAME",
		Short: "Ask a running schedq scheduler why a pod is pending",
		Long: `Ask a running schedq scheduler why a pod is pending: where the pod is in
the queue (active, backoff or unschedulable), what its last attempt found,
and which cluster events would move it, and when it is predicted to
start (a forecast of the scheduler's own state run forward in virtual
time, with the runtime estimates it rests on). It reads the scheduler's
/debug/queue endpoint at --address.`,
		Example: `  # The scheduler runs in a cluster (deploy/schedq.yaml: HTTPS only):
  # forward the leader's port (the Lease holder's identity is its pod's
  # name, then _ and a number; a standby answers 503), and pass a token
  # of a caller allowed to read /debug/queue (e.g. bound to the
  # schedq-metrics-reader role).
  leader=$(kubectl -n kube-system get lease schedq -o jsonpath='{.spec.holderIdentity}')
  kubectl -n kube-system port-forward "pod/${leader%_*}" 10351:10351 &
  schedq explain default/web-0 --address https://127.0.0.1:10351 \
    --token "$(kubectl create token default)" --insecure-skip-tls-verify

  # The same answer as JSON, from a development scheduler serving plain
  # HTTP on loopback (--secure-port=0 --address=127.0.0.1:10351).
  schedq explain default/web-0 -o json`,
		Args: oneNamespacedName,
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[0], "/")
			if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return fmt.Errorf("%q is not NAMESPACE/NAME", args[0])
			}
			if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
				return fmt.Errorf("%q: %q is not a namespace name: %s", args[0], ns, msgs[0])
			}
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				return fmt.Errorf("%q: %q is not a pod name: %s", args[0], name, msgs[0])
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("--output: %q is not text or json", output)
			}
			if err := app.CheckAddress(address); err != nil {
				return err
			}
			if timeout <= 0 {
				return fmt.Errorf("--timeout: must be positive, got %v", timeout)
			}
			client, err := explainClient(address, token, caFile, insecure)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			body, err := app.Explain(ctx, client, address, ns, name, output)
			if err != nil {
				return timedOut(ctx, err, address, timeout)
			}
			_, err = stdout.Write(body)
			return err
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:10351", "the scheduler's --address (host:port or a URL)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for a scheduler serving HTTPS (--address https://...)")
	cmd.Flags().StringVar(&caFile, "certificate-authority", "", "PEM file of the CA that signed the scheduler's HTTPS certificate")
	cmd.Flags().BoolVar(&insecure, "insecure-skip-tls-verify", false, "do not verify the scheduler's HTTPS certificate (its default one is self-signed)")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "give up when the scheduler has not answered within this")
	return cmd
}

// timedOut is err, or, if ctx's deadline ended the request, an error
// that says the scheduler did not answer in time: it was reachable.
func timedOut(ctx context.Context, err error, address string, timeout time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("scheduler at %s: no answer within %v (--timeout)", address, timeout)
	}
	return err
}

// explainClient is the HTTP client of explain and pending for the
// scheduler at address: TLS settings for a scheduler's HTTPS port, and
// the bearer token on every request. The token goes only over HTTPS (a
// plain HTTP address with a token is refused, as is one with TLS options,
// which would do nothing), and the client follows no redirect, which
// would carry the token to another address.
func explainClient(address, token, caFile string, insecure bool) (*http.Client, error) {
	plain := !strings.HasPrefix(strings.ToLower(address), "https://")
	if token != "" && plain {
		return nil, fmt.Errorf("--token: sent only over HTTPS, and --address %s is plain HTTP (give https://HOST:PORT, the scheduler's --secure-port)", address)
	}
	for _, tlsFlag := range []struct {
		name string
		set  bool
	}{{"--certificate-authority", caFile != ""}, {"--insecure-skip-tls-verify", insecure}} {
		if tlsFlag.set && plain {
			return nil, fmt.Errorf("%s: only for HTTPS, and --address %s is plain HTTP (give https://HOST:PORT, the scheduler's --secure-port)", tlsFlag.name, address)
		}
	}
	if insecure && caFile != "" {
		return nil, fmt.Errorf("--insecure-skip-tls-verify, --certificate-authority %s: give one; with the first the certificate is not checked against the second", caFile)
	}
	tlsConfig := &tls.Config{InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--certificate-authority: %w", err)
		}
		tlsConfig.RootCAs = x509.NewCertPool()
		if !tlsConfig.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--certificate-authority %s: no PEM certificate in it", caFile)
		}
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tlsConfig
	var rt http.RoundTripper = base
	if token != "" {
		rt = bearer{token: token, next: base}
	}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &http.Client{Transport: rt, CheckRedirect: noRedirect}, nil
}

// bearer adds a bearer token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// oneNamespacedName accepts exactly one argument, the pod's
// NAMESPACE/NAME, and says so when it is missing.
func oneNamespacedName(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: schedq %s NAMESPACE/NAME (e.g. default/web-0): want one pod, got %d arguments", cmd.Name(), len(args))
	}
	return nil
}
