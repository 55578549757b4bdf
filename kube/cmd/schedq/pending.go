package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedq/schedq/kube/app"
)

func pendingCmd(stdout io.Writer) *cobra.Command {
	var address, output, token, caFile, namespace string
	var insecure bool
	var offset, limit int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "pending",
		Short: "List the pods a running schedq scheduler has pending, in the order they wait",
		Long: `List the pods a running schedq scheduler has pending, in the order they
wait: those ready in pop order first (with fair sharing on, as the
namespaces' usage interleaves them), then those backing off, then the
unschedulable and the gated ones, each with the one-line reason it waits
and its predicted start (one forecast serves the whole listing).
It reads the scheduler's /debug/queue endpoint at --address, a page at a
time.`,
		Example: `  # Everything pending, first page.
  schedq pending

  # One namespace's pods, the next 100 after the first 500.
  schedq pending --namespace team-a --offset 500 --limit 100`,
		Args: noArgs(false),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("--output: %q is not text or json", output)
			}
			if namespace != "" {
				if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
					return fmt.Errorf("--namespace: %q is not a namespace name: %s", namespace, msgs[0])
				}
			}
			if offset < 0 {
				return fmt.Errorf("--offset: must not be negative, got %d", offset)
			}
			if limit < 0 || limit > app.MaxQueuePageLimit {
				return fmt.Errorf("--limit: %d is not between 1 and %d (0: the server's default)", limit, app.MaxQueuePageLimit)
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
			body, err := app.Pending(ctx, client, address, namespace, offset, limit, output)
			if err != nil {
				return timedOut(ctx, err, address, timeout)
			}
			_, err = stdout.Write(body)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&namespace, "namespace", "", "only this namespace's pods; empty: all")
	f.IntVar(&offset, "offset", 0, "skip this many pods of the listing")
	f.IntVar(&limit, "limit", 0, fmt.Sprintf("at most this many pods (up to %d); 0: the server's default (%d)", app.MaxQueuePageLimit, app.DefaultQueuePageLimit))
	f.StringVar(&address, "address", "127.0.0.1:10351", "the scheduler's --address (host:port or a URL)")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	f.StringVar(&token, "token", "", "bearer token for a scheduler serving HTTPS (--address https://...)")
	f.StringVar(&caFile, "certificate-authority", "", "PEM file of the CA that signed the scheduler's HTTPS certificate")
	f.BoolVar(&insecure, "insecure-skip-tls-verify", false, "do not verify the scheduler's HTTPS certificate (its default one is self-signed)")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "give up when the scheduler has not answered within this")
	return cmd
}
