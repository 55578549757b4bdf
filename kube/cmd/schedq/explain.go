package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/schedq/schedq/kube/app"
)

func explainCmd(stdout io.Writer) *cobra.Command {
	var address, output string
	cmd := &cobra.Command{
		Use:   "explain NAMESPACE/NAME",
		Short: "Ask a running schedq scheduler why a pod is pending",
		Long: `Ask a running schedq scheduler why a pod is pending: where the pod is in
the queue (active, backoff or unschedulable), what its last attempt found,
and which cluster events would move it. It reads the scheduler's
/debug/queue endpoint at --address.`,
		Example: `  # The scheduler runs in a cluster: forward the leader's port (the
  # Lease holder's identity is its pod's name, then _ and a number).
  leader=$(kubectl -n kube-system get lease schedq -o jsonpath='{.spec.holderIdentity}')
  kubectl -n kube-system port-forward "pod/${leader%_*}" 10351:10351 &
  schedq explain default/web-0

  # The same answer as JSON, from a scheduler on another address.
  schedq explain default/web-0 --address 10.0.0.7:10351 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[0], "/")
			if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return fmt.Errorf("%q is not NAMESPACE/NAME", args[0])
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("--output: %q is not text or json", output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			body, err := app.Explain(ctx, http.DefaultClient, address, ns, name, output)
			if err != nil {
				return err
			}
			_, err = stdout.Write(body)
			return err
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:10351", "the scheduler's --address (host:port or a URL)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
