// Command schedq is schedq's command line: the simulator, the Kubernetes
// scheduler and the explain client. It only wires flags to the packages
// that do the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq/kube/app"
	"github.com/schedq/schedq/kube/plugins"
)

func main() {
	if err := newRoot(os.Stdout, os.Stderr).Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "schedq:", err)
		os.Exit(1)
	}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "schedq",
		Short:         "The kube-scheduler scheduling queue as a standalone product",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(simulateCmd(stdout, stderr), schedulerCmd(stderr), explainCmd(stdout))
	return root
}

func schedulerCmd(stderr io.Writer) *cobra.Command {
	o := app.Options{Serving: app.NewServingOptions()}
	var scoring, logLevel, logFormat string
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run schedq as a secondary Kubernetes scheduler",
		Long: `Run schedq as a secondary Kubernetes scheduler: it places the pods whose
spec.schedulerName is --scheduler-name, on the cluster --kubeconfig points at
(or the one it runs in), with leader election on a Lease.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(stderr, logLevel, logFormat)
			if err != nil {
				return err
			}
			switch scoring {
			case "least-allocated":
				o.Scoring = plugins.LeastAllocated
			case "balanced":
				o.Scoring = plugins.BalancedAllocation
			default:
				return fmt.Errorf("--scoring: %q is not least-allocated or balanced", scoring)
			}
			if o.SchedulerName == "" {
				return errors.New("--scheduler-name must not be empty")
			}
			o.Logger = logger
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return app.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; empty: in-cluster configuration")
	f.StringVar(&o.SchedulerName, "scheduler-name", "schedq", "schedule pods whose spec.schedulerName is this")
	f.StringVar(&o.Address, "address", "", "plain-HTTP address of /metrics, /healthz, /readyz, /livez and /debug/queue, without authentication: development only, loopback addresses only (127.0.0.1:10351); empty: off (see --secure-port)")
	f.StringVar(&scoring, "scoring", "least-allocated", "node scoring: least-allocated or balanced")
	f.IntVar(&o.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0, "feasible nodes to find before scoring, in % of nodes; 0: adaptive, as kube-scheduler")
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "run leader election on a Lease; only the leader schedules")
	f.StringVar(&o.LeaseNamespace, "leader-elect-resource-namespace", "kube-system", "namespace of the Lease")
	f.StringVar(&o.LeaseName, "leader-elect-resource-name", "schedq", "name of the Lease")
	f.StringVar(&o.Identity, "leader-elect-identity", "", "this replica's identity in the Lease; default hostname_pid")
	f.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a lease lasts without renewal")
	f.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it gives up")
	f.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often to try to acquire or renew")
	f.DurationVar(&o.FenceMargin, "leader-elect-fence-margin", 0, "the leader stops binding this long before its lease could expire, counted from its last successful renewal; 0: lease duration - renew deadline")
	f.Float32Var(&o.QPS, "kube-api-qps", 50, "API requests per second")
	f.IntVar(&o.Burst, "kube-api-burst", 100, "API request burst")
	f.StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&logFormat, "log-format", "text", "text or json")
	o.Serving.AddFlags(f) // --secure-port, --bind-address, --tls-*, --authentication-*, --authorization-*
	return cmd
}

// newLogger builds the slog logger and routes klog (client-go's logs) to it.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format: %q is not text or json", format)
	}
	logger := slog.New(h)
	klog.SetSlogLogger(logger)
	return logger, nil
}

func explainCmd(stdout io.Writer) *cobra.Command {
	var address, output string
	cmd := &cobra.Command{
		Use:   "explain NAMESPACE/NAME",
		Short: "Ask a running schedq scheduler why a pod is pending",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, name, ok := strings.Cut(args[0], "/")
			if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
				return fmt.Errorf("%q is not NAMESPACE/NAME", args[0])
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("--output: %q is not text or json", output)
			}
			base := address
			if !strings.Contains(base, "://") {
				base = "http://" + base
			}
			u := fmt.Sprintf("%s/debug/queue/%s/%s", strings.TrimSuffix(base, "/"), url.PathEscape(ns), url.PathEscape(name))
			if output == "text" {
				u += "?format=text"
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("scheduler at %s is not reachable: %w", address, err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s", strings.TrimSpace(string(body)))
			}
			_, err = stdout.Write(body)
			return err
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1:10351", "the scheduler's --address")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
