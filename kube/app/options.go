package app

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
)

// Validate checks every option (CheckFlags) and then, if they all pass,
// loads the history file (LoadHistory): before anything connects.
func (o *Options) Validate() error {
	if err := o.CheckFlags(); err != nil {
		return err
	}
	return o.LoadHistory()
}

// LoadHistory loads --history-file (HistoryOptions.File), if any, and
// checks that a file can be created in its directory (it creates one
// there and removes it); an error names the flag. Run loads it if
// nothing did before. Call it after CheckFlags passed, as Validate does:
// no file is read or created for a command line that is refused.
func (o *Options) LoadHistory() error {
	if err := o.History.load(); err != nil {
		return fmt.Errorf("%s: %w", o.source("history-file"), err)
	}
	return nil
}

// CheckFlags checks every option and returns all the problems at once,
// each naming the command-line flag that sets it, or the field of the
// --config file that does (settings.go). It reads no file but --config's
// (and its profile's), and creates none: LoadHistory does the history
// file's work.
// With --config (Config.File), it first loads the file and applies the
// settings it takes from it (see applyConfig): a file that fails is
// reported alone, since the other options would be checked against
// settings it did not give.
func (o *Options) CheckFlags() error {
	if o.Config.File != "" {
		if err := checkInputFile(o.Config.File, MaxInputFileBytes); err != nil {
			return fmt.Errorf("--config %s: %w", o.Config.File, err)
		}
		if err := o.applyConfig(); err != nil {
			return err
		}
	} else {
		if err := o.loadProfile(); err != nil {
			return err
		}
	}
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o.source(flag), fmt.Sprintf(format, args...)))
	}
	if o.SchedulerName == "" {
		bad("scheduler-name", "must not be empty")
	} else if msgs := validation.IsDNS1123Subdomain(o.SchedulerName); len(msgs) > 0 {
		bad("scheduler-name", "%q can never match a pod's spec.schedulerName: %s", o.SchedulerName, msgs[0])
	}
	if o.Address != "" {
		if err := validateAddress(o.Address); err != nil {
			bad("address", "%q: %v", o.Address, err)
		} else if err := checkLoopback(o.Address); err != nil {
			errs = append(errs, err)
		} else if err := o.Serving.portTaken(o.Address); err != nil {
			errs = append(errs, err)
		}
	}
	if o.PercentageOfNodesToScore < 0 || o.PercentageOfNodesToScore > 100 {
		bad("percentage-of-nodes-to-score", "%d is not between 0 and 100 (0: adaptive)", o.PercentageOfNodesToScore)
	}
	if !(o.QPS > 0) {
		bad("kube-api-qps", "must be more than 0, got %v", o.QPS)
	} else if math.IsInf(float64(o.QPS), 1) {
		bad("kube-api-qps", "must be a finite number, got %v", o.QPS)
	}
	if o.Burst <= 0 {
		bad("kube-api-burst", "must be more than 0, got %d", o.Burst)
	}
	if o.StallTimeout < 0 {
		bad("stall-timeout", "must not be negative, got %v (0: %v)", o.StallTimeout, DefaultStallTimeout)
	} else if o.StallTimeout > 0 && o.StallTimeout < MinStallTimeout {
		bad("stall-timeout", "%v is less than %v: a healthy cycle may wait 30s for a binding slot and 10s for its status patch, and would be taken for a stuck one", o.StallTimeout, MinStallTimeout)
	}
	errs = append(errs, o.validateLeaderElection()...)
	errs = append(errs, o.Fairness.validate(o.source)...)
	errs = append(errs, o.History.validate(o.source)...)
	errs = append(errs, o.Serving.validate()...)
	errs = append(errs, kubeconfigFiles(o.Kubeconfig, clientcmd.RecommendedHomeFile))
	errs = append(errs, o.historyFileClash()...)
	return errors.Join(errs...)
}

// historyFileClash refuses a --history-file that is a file the scheduler
// reads (--config, --kubeconfig, the HTTPS port's files) or writes (the
// pair --cert-dir writes where none is there yet), naming both: each
// write of the history replaces the file. Paths are compared made
// absolute and clean, and existing files as files (links).
func (o *Options) historyFileClash() []error {
	h := o.History.File
	if h == "" {
		return nil
	}
	type other struct{ what, path string }
	in := func(flag, path string) other { return other{"the input --" + flag + " " + path, path} }
	others := []other{in("config", o.Config.File), in("kubeconfig", o.Kubeconfig)}
	if s := o.Serving; s != nil && s.Secure != nil {
		ck := s.Secure.ServerCert.CertKey
		others = append(others, in("tls-cert-file", ck.CertFile), in("tls-private-key-file", ck.KeyFile))
		if d := s.Secure.ServerCert.CertDirectory; d != "" && s.Secure.BindPort > 0 {
			pair := filepath.Join(d, s.Secure.ServerCert.PairName)
			others = append(others, other{"the certificate --cert-dir " + d + " writes", pair + ".crt"},
				other{"the key --cert-dir " + d + " writes", pair + ".key"})
		}
		if a := s.Authentication; a != nil {
			others = append(others, in("authentication-kubeconfig", a.RemoteKubeConfigFile),
				in("client-ca-file", a.ClientCert.ClientCA), in("requestheader-client-ca-file", a.RequestHeader.ClientCAFile))
		}
		if a := s.Authorization; a != nil {
			others = append(others, in("authorization-kubeconfig", a.RemoteKubeConfigFile))
		}
	}
	var errs []error
	for _, x := range others {
		if x.path != "" && sameFile(h, x.path) {
			errs = append(errs, fmt.Errorf("%s %s is %s: each write of the history would replace it", o.source("history-file"), h, x.what))
		}
	}
	return errs
}

// sameFile reports whether a and b name one file: the same path made
// absolute and clean, or, both there, the same file.
func sameFile(a, b string) bool {
	aa, errA := filepath.Abs(a)
	ab, errB := filepath.Abs(b)
	if errA == nil && errB == nil && aa == ab {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// validateLeaderElection checks the lease's options: the durations are
// always positive, and when leader election is on the Lease's namespace and
// name are valid and the durations fit together as client-go's leader
// election requires (lease > renew deadline > JitterFactor x retry period).
func (o *Options) validateLeaderElection() []error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o.source("leader-elect-"+flag), fmt.Sprintf(format, args...)))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"lease-duration", o.LeaseDuration}, {"renew-deadline", o.RenewDeadline}, {"retry-period", o.RetryPeriod}} {
		if d.v <= 0 {
			bad(d.flag, "must be positive, got %v", d.v)
		}
	}
	if from, ok := o.Config.setBy["leader-elect-fence-margin"]; ok && !o.LeaderElect {
		errs = append(errs, fmt.Errorf("%s: only with leader election on, and --leader-elect=false turns it off", from))
	}
	if !o.LeaderElect || len(errs) > 0 {
		return errs
	}
	if msgs := validation.IsDNS1123Label(o.LeaseNamespace); len(msgs) > 0 {
		bad("resource-namespace", "%q is not a namespace name: %s", o.LeaseNamespace, msgs[0])
	}
	if msgs := validation.IsDNS1123Subdomain(o.LeaseName); len(msgs) > 0 {
		bad("resource-name", "%q is not a Lease name: %s", o.LeaseName, msgs[0])
	}
	if err := leaseSeconds(o.LeaseDuration); err != nil {
		errs = append(errs, err)
	}
	if o.LeaseDuration <= o.RenewDeadline {
		bad("lease-duration", "%v must be longer than --leader-elect-renew-deadline (%v)", o.LeaseDuration, o.RenewDeadline)
	}
	if o.FenceMargin < 0 || (o.FenceMargin > 0 && o.FenceMargin >= o.LeaseDuration) {
		bad("fence-margin", "%v must be 0 (lease duration - renew deadline) or between 0 and --leader-elect-lease-duration (%v)", o.FenceMargin, o.LeaseDuration)
	}
	if float64(o.RenewDeadline) <= leaderelection.JitterFactor*float64(o.RetryPeriod) {
		bad("renew-deadline", "%v must be longer than %v x --leader-elect-retry-period (%v)",
			o.RenewDeadline, leaderelection.JitterFactor, o.RetryPeriod)
	}
	return errs
}

// leaseSeconds refuses a lease duration that is not a whole number of
// seconds: the Lease records it in whole seconds (client-go truncates it
// into leaseDurationSeconds), and the other replicas wait only that long
// before they take the Lease over. Under a second it is recorded as 0 and
// taken over at once; a fraction would keep the fence, which counts the
// full duration, open past the time the others wait.
func leaseSeconds(d time.Duration) error {
	if d%time.Second == 0 {
		return nil
	}
	return fmt.Errorf("--leader-elect-lease-duration: %v is not a whole number of seconds: the Lease records %ds, and the other replicas wait only that long",
		d, d/time.Second)
}

// validateAddress checks a listen address: host:port with a numeric port,
// and a host that is empty, an IP address or a DNS name.
func validateAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("not host:port (%v)", err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if host == "" || net.ParseIP(host) != nil {
		return nil
	}
	if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
		return fmt.Errorf("host %q is neither an IP address nor a DNS name", host)
	}
	return nil
}
