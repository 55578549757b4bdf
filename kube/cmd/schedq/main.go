// Command schedq is schedq's command line: the simulator, the Kubernetes
// scheduler and the explain client. It only wires flags to the packages
// that do the work.
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/schedq/schedq/kube/app"
	"github.com/schedq/schedq/kube/sim"
)

func main() {
	if err := runCLI(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "schedq:", err)
		os.Exit(1)
	}
}

// runCLI runs the command line args. A write to stdout that fails (a
// full disk, a closed pipe) makes it fail too, so that results that were
// lost are never reported as a success.
func runCLI(args []string, stdout, stderr io.Writer) error {
	out := &stickyWriter{w: stdout}
	root := newRoot(out, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		return err
	}
	if out.err != nil {
		return fmt.Errorf("writing the output: %w", out.err)
	}
	return nil
}

// stickyWriter remembers the first error of w and returns it for every
// write after it.
type stickyWriter struct {
	w   io.Writer
	err error
}

// Write implements io.Writer.
func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
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
	root.AddCommand(simulateCmd(stdout, stderr), schedulerCmd(stderr), explainCmd(stdout), pendingCmd(stdout), whatifCmd(stdout))
	for _, c := range root.Commands() {
		// pflag's warnings (a deprecated flag) go to stderr: cobra would
		// print them on stdout, before the results.
		c.Flags().SetOutput(stderr)
	}
	root.SetHelpCommand(helpCmd())
	strictCompletion(root)
	setVersion(root, version(debug.ReadBuildInfo()))
	return root
}

// helpCmd is `schedq help [command]`: cobra's prints the usage and
// succeeds for a command that does not exist; this one fails, naming it.
func helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return fmt.Errorf("help %s: no such command (see schedq help)", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	}
}

// strictCompletion adds cobra's completion command, failing for a shell
// it does not know or none, where cobra's prints its usage and succeeds.
func strictCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	c, _, err := root.Find([]string{"completion"})
	if err != nil || c == root {
		return
	}
	var shells []string
	for _, sub := range c.Commands() {
		shells = append(shells, sub.Name())
	}
	c.Args = cobra.NoArgs
	c.RunE = func(*cobra.Command, []string) error {
		return fmt.Errorf("completion: name a shell: %s", orList(shells))
	}
}

func schedulerCmd(stderr io.Writer) *cobra.Command {
	o := app.Options{Serving: app.NewServingOptions()}
	var scoring, logLevel, logFormat string
	upstream := true
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run schedq as a secondary Kubernetes scheduler",
		Long: `Run schedq as a secondary Kubernetes scheduler: it places the pods whose
spec.schedulerName is --scheduler-name, with leader election on a Lease.

It finds its cluster as kubectl does: --kubeconfig if given, otherwise the
files listed in $KUBECONFIG, otherwise ~/.kube/config, and if none of these
gives a configuration, the cluster it runs in (its service account).
Every flag is checked before it connects.`,
		Args: noArgs(false),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Every flag is checked, and all the problems reported at
			// once, before any work: the history file is loaded (and a
			// file created in its directory) only then. The flags'
			// conflicts with --config are among them: they are checked
			// once CheckFlags has applied the file (a file that fails
			// applies nothing, and so conflicts with nothing).
			flags := o // as the flags set it; CheckFlags applies the file's settings to o
			_, logErr := logLevelFormat(logLevel, logFormat)
			checkErr := o.CheckFlags()
			if err := errors.Join(refuseEmptyOf(cmd.Flags(), schedulerEmptyRefused), removedFlags(cmd, upstream), checkErr, configOverrides(cmd, o, flags),
				electionFlagsOff(cmd, o.LeaderElect), servingFlagsOff(cmd, o.Serving), logErr); err != nil {
				return err
			}
			if err := o.LoadHistory(); err != nil {
				return err
			}
			logger, err := newLogger(stderr, logLevel, logFormat)
			if err != nil {
				return err
			}
			o.Logger = logger
			o.Klog = true
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			dump := make(chan os.Signal, 1)
			signal.Notify(dump, syscall.SIGUSR2)
			defer signal.Stop(dump)
			o.Dump = dump
			return app.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Config.File, "config", "", "a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) file; each of its profiles schedules the pods that name it, and the first profile's schedulerName, percentageOfNodesToScore, the pod backoffs and schedq's own settings (its pluginConfig entry Schedq) replace the flags (see docs/scheduler.md)")
	f.BoolVar(&upstream, "upstream-plugins", true, "schedq always schedules with kube-scheduler v1.37.2's framework and in-tree plugins (the --config profile, or the default one); =false is refused")
	must(f.MarkDeprecated("upstream-plugins", "kube-scheduler's framework is the only one: the flag does nothing"))
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; default: $KUBECONFIG, then ~/.kube/config, then the in-cluster configuration")
	f.StringVar(&o.SchedulerName, "scheduler-name", "schedq", "schedule pods whose spec.schedulerName is this")
	f.StringVar(&o.Address, "address", "", "plain-HTTP address of /metrics, /healthz, /readyz, /livez and /debug/queue, without authentication: development only, loopback addresses only (127.0.0.1:10351); empty: off (see --secure-port)")
	f.StringVar(&scoring, "scoring", "", "removed: refused; set NodeResourcesFit's scoringStrategy in the --config profile")
	must(f.MarkHidden("scoring"))
	f.IntVar(&o.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0, "feasible nodes to find before scoring, in % of nodes; 0: adaptive, as kube-scheduler")
	f.BoolVar(&o.Fairness.Namespaces, "fair-namespaces", false, "share the queue fairly between namespaces: within a priority, the next pod comes from the namespace that used the least recently")
	var weights []string // each --fair-namespace-weights: repeats add up
	f.Func("fair-namespace-weights", "NAMESPACE=WEIGHT,... for --fair-namespaces: a namespace of weight 2 gets twice the pops of one of weight 1 (default 1)", func(s string) (err error) {
		if s != "" {
			weights = append(weights, s)
		}
		o.Fairness.Weights, err = app.ParseWeights(strings.Join(weights, ","))
		return err
	})
	f.DurationVar(&o.Fairness.HalfLife, "fair-half-life", 0, "for --fair-namespaces: how fast a namespace's usage fades (0: 1m)")
	f.StringSliceVar(&o.History.Labels, "history-label", nil, "forecasts learn runtimes per value of these labels, coarsest first (repeat or comma-separate; a class with too few runs falls back to the coarser; default: per controller, falling back to its owner kind and namespace)")
	f.StringVar(&o.History.Tail, "history-tail", "longest", "what a runtime from history is when most runs like it are still going: longest (the longest run seen) or exponential (the estimate continued at its constant hazard)")
	f.StringVar(&o.History.File, "history-file", "", "keep the runtimes the forecasts learn in this file across restarts: loaded at start (missing: an empty history; one that does not parse, is larger than 64 MiB or is not a regular file is refused), written every minute when they changed and at shutdown; empty: the history starts empty at each start")
	f.BoolVar(&o.NoWakeBudget, "no-wake-budget", false, "wake every pending pod a cluster event may help, as kube-scheduler does, instead of only those the event makes room for")
	f.DurationVar(&o.StallTimeout, "stall-timeout", 0, "how long one scheduling cycle may run before /healthz, /livez and /readyz fail, so that a stuck leader is restarted and gives up its lease; at least 1m; 0: 2m")
	f.BoolVar(&o.LeaderElect, "leader-elect", true, "run leader election on a Lease; only the leader schedules")
	f.StringVar(&o.LeaseNamespace, "leader-elect-resource-namespace", "kube-system", "namespace of the Lease")
	f.StringVar(&o.LeaseName, "leader-elect-resource-name", "schedq", "name of the Lease")
	f.StringVar(&o.Identity, "leader-elect-identity", "", "this replica's identity in the Lease; default hostname_<random UUID>, new at each start")
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

// newLogger builds the slog logger and routes klog (client-go's logs) to
// it until app.Run routes klog through its rate limit (Options.Klog).
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	lv, err := logLevelFormat(level, format)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	if format == "json" {
		h = slog.NewJSONHandler(w, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	logger := slog.New(h)
	klog.SetSlogLogger(logger)
	return logger, nil
}

// logLevelFormat checks --log-level and --log-format, reporting both
// when both are wrong, and returns the level.
func logLevelFormat(level, format string) (slog.Level, error) {
	var lv slog.Level
	var errs []error
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %q is not debug, info, warn or error", level))
	}
	if format != "text" && format != "json" {
		errs = append(errs, fmt.Errorf("--log-format: %q is not text or json", format))
	}
	return lv, errors.Join(errs...)
}

// removedFlags refuses the flags of schedq's former hand-written plugins,
// naming what replaces each: --upstream-plugins=false (kube-scheduler's
// framework is the only one; --config's profile configures its plugins)
// and --scoring (NodeResourcesFit's scoringStrategy in that profile).
// --upstream-plugins=true is accepted and does nothing.
func removedFlags(cmd *cobra.Command, upstream bool) error {
	var errs []error
	if cmd.Flags().Changed("upstream-plugins") && !upstream {
		errs = append(errs, errors.New("--upstream-plugins=false: schedq's own plugins were removed; schedq runs kube-scheduler v1.37.2's framework and plugins: configure them with --config (a KubeSchedulerConfiguration profile)"))
	}
	if cmd.Flags().Changed("scoring") {
		errs = append(errs, errors.New("--scoring: removed with schedq's own plugins: set NodeResourcesFit's scoringStrategy (or the weight of NodeResourcesBalancedAllocation) in the profile of --config (a KubeSchedulerConfiguration)"))
	}
	return errors.Join(errs...)
}

// configOverrides refuses --scheduler-name or --percentage-of-nodes-to-score
// given with a --config whose profile sets another value, and each flag of
// schedq's own settings given with another value than the file's Schedq
// args (app.Options.FileConflicts). flags are the options as the flags
// set them; Validate has applied the file's to o. The file's would
// otherwise replace the flag silently, and a profile without a
// schedulerName would schedule every pod of kube-scheduler's
// default-scheduler. All the conflicts are reported at once.
func configOverrides(cmd *cobra.Command, o app.Options, flags app.Options) error {
	if o.Config.File == "" {
		return nil
	}
	var errs []error
	if cmd.Flags().Changed("scheduler-name") && o.SchedulerName != flags.SchedulerName {
		errs = append(errs, fmt.Errorf("--scheduler-name %s: with --config the profiles' schedulerNames decide, and %s's first is %s (kube-scheduler's default-scheduler if the profile sets none); set it in the file only", flags.SchedulerName, o.Config.File, o.SchedulerName))
	}
	if cmd.Flags().Changed("percentage-of-nodes-to-score") && o.PercentageOfNodesToScore != flags.PercentageOfNodesToScore {
		errs = append(errs, fmt.Errorf("--percentage-of-nodes-to-score %d: with --config the file decides, and %s's is %d (0 if the file sets none); set it in the file only", flags.PercentageOfNodesToScore, o.Config.File, o.PercentageOfNodesToScore))
	}
	errs = append(errs, o.FileConflicts(flags, cmd.Flags().Changed)...)
	return errors.Join(errs...)
}

// noArgs is the Args of a command without subcommands that takes no
// argument: cobra's NoArgs calls a stray one an unknown command, which
// misleads when there are none (schedq simulate NodeArrival). The error
// names the arguments, and the flag a built-in scenario's name is given
// with, for the commands that take a scenario.
func noArgs(takesScenario bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = strconv.Quote(a)
		}
		hint := "see schedq " + cmd.Name() + " --help"
		if takesScenario && len(args) == 1 && slices.Contains(sim.Builtins(), args[0]) {
			hint = "a scenario is given as --scenario " + args[0]
		}
		return fmt.Errorf("%s takes no arguments, got %s (%s)", cmd.Name(), strings.Join(quoted, ", "), hint)
	}
}

// must panics on err: a flag named wrong is a programming error.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// servingFlagsOff refuses the HTTPS port's flags (k8s.io/apiserver's
// serving, authentication and authorization options) given with
// --secure-port=0: with the port off they would do nothing.
func servingFlagsOff(cmd *cobra.Command, o *app.ServingOptions) error {
	if o == nil || o.Secure == nil || o.Secure.BindPort != 0 {
		return nil
	}
	own := pflag.NewFlagSet("serving", pflag.ContinueOnError)
	app.NewServingOptions().AddFlags(own)
	var set []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name != "secure-port" && own.Lookup(f.Name) != nil {
			set = append(set, "--"+f.Name)
		}
	})
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("%s: only with the HTTPS port on, and --secure-port=0 turns it off", strings.Join(set, ", "))
}

// electionFlagsOff refuses the --leader-elect-* flags given with
// --leader-elect=false: with leader election off they would do nothing.
func electionFlagsOff(cmd *cobra.Command, on bool) error {
	if on {
		return nil
	}
	var set []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if strings.HasPrefix(f.Name, "leader-elect-") {
			set = append(set, "--"+f.Name)
		}
	})
	if len(set) == 0 {
		return nil
	}
	return fmt.Errorf("%s: only with leader election on, and --leader-elect=false turns it off", strings.Join(set, ", "))
}
