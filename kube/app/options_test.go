package app

import (
	"strings"
	"testing"
	"time"
)

// valid is a complete set of options that passes Validate: the flags'
// defaults.
func valid() Options {
	return Options{
		SchedulerName: "schedq",
		LeaderElect:   true, LeaseNamespace: "kube-system", LeaseName: "schedq",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		QPS: 50, Burst: 100,
	}
}

func TestValidate(t *testing.T) {
	if err := (&Options{}).Validate(); err == nil {
		t.Fatal("the zero Options are valid")
	}
	ok := []func(*Options){
		func(o *Options) {},
		func(o *Options) { o.Address = "127.0.0.1:10351" },
		func(o *Options) { o.Address = "localhost:0" },
		func(o *Options) { o.Address = "[::1]:8080" },
		func(o *Options) { o.PercentageOfNodesToScore = 100 },
		func(o *Options) { o.LeaderElect, o.LeaseNamespace, o.LeaseDuration = false, "", 5*time.Second },
	}
	for i, change := range ok {
		o := valid()
		change(&o)
		if err := o.Validate(); err != nil {
			t.Errorf("valid options %d: %v", i, err)
		}
	}
	bad := []struct {
		change func(*Options)
		want   string
	}{
		{func(o *Options) { o.SchedulerName = "" }, "--scheduler-name: must not be empty"},
		{func(o *Options) { o.SchedulerName = "My Scheduler" }, `--scheduler-name: "My Scheduler" can never match`},
		{func(o *Options) { o.Address = "nonsense" }, `--address: "nonsense": not host:port`},
		{func(o *Options) { o.Address = "127.0.0.1:http" }, `--address: "127.0.0.1:http": port "http"`},
		{func(o *Options) { o.Address = "127.0.0.1:70000" }, `port "70000"`},
		{func(o *Options) { o.Address = "no_such host:80" }, `host "no_such host"`},
		{func(o *Options) { o.Address = ":10351" }, `--address ":10351": plain HTTP serves /metrics and /debug/queue without authentication, so it must be a loopback address`},
		{func(o *Options) { o.Address = "0.0.0.0:10351" }, "must be a loopback address"},
		{func(o *Options) { o.FenceMargin = -time.Second }, "--leader-elect-fence-margin: -1s"},
		{func(o *Options) { o.FenceMargin = 15 * time.Second }, "--leader-elect-fence-margin: 15s must be 0"},
		{func(o *Options) { o.PercentageOfNodesToScore = 200 }, "--percentage-of-nodes-to-score: 200 is not between 0 and 100"},
		{func(o *Options) { o.PercentageOfNodesToScore = -5 }, "--percentage-of-nodes-to-score: -5"},
		{func(o *Options) { o.QPS = -1 }, "--kube-api-qps: must be more than 0, got -1"},
		{func(o *Options) { o.QPS = 0 }, "--kube-api-qps"},
		{func(o *Options) { o.Burst = 0 }, "--kube-api-burst: must be more than 0, got 0"},
		{func(o *Options) { o.StallTimeout = -time.Second }, "--stall-timeout: must not be negative, got -1s"},
		{func(o *Options) { o.StallTimeout = time.Nanosecond }, "--stall-timeout: 1ns is less than 1m0s"},
		{func(o *Options) { o.StallTimeout = 59 * time.Second }, "--stall-timeout: 59s is less than 1m0s"},
		{func(o *Options) { o.LeaseDuration = -time.Second }, "--leader-elect-lease-duration: must be positive, got -1s"},
		{func(o *Options) { o.RenewDeadline = 0 }, "--leader-elect-renew-deadline: must be positive"},
		{func(o *Options) { o.LeaderElect, o.RetryPeriod = false, 0 }, "--leader-elect-retry-period: must be positive"},
		{func(o *Options) { o.LeaseDuration = 10 * time.Second }, "--leader-elect-lease-duration: 10s must be longer than --leader-elect-renew-deadline (10s)"},
		{func(o *Options) { o.RetryPeriod = 9 * time.Second }, "--leader-elect-renew-deadline: 10s must be longer than 1.2 x --leader-elect-retry-period (9s)"},
		{func(o *Options) { o.LeaseNamespace = "Kube_System" }, `--leader-elect-resource-namespace: "Kube_System"`},
		{func(o *Options) { o.LeaseName = "" }, `--leader-elect-resource-name: ""`},
		{func(o *Options) { o.History.Labels = []string{"app", "bad key!"} }, `--history-label: "bad key!" is not a label key`},
		{func(o *Options) { o.History.Labels = []string{"app", "app"} }, `--history-label: "app" is listed twice`},
		{func(o *Options) { o.History.Tail = "weibull" }, `--history-tail: history tail "weibull": not longest or exponential`},
	}
	for _, tc := range bad {
		o := valid()
		tc.change(&o)
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err %v, want one containing %q", err, tc.want)
		}
	}
	// Every problem is reported, not only the first.
	o := valid()
	o.PercentageOfNodesToScore, o.QPS, o.Address = 200, -1, "nonsense"
	err := o.Validate()
	for _, flag := range []string{"--percentage-of-nodes-to-score", "--kube-api-qps", "--address"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("err %v lacks %s", err, flag)
		}
	}
}

// TestLeaseDurationInWholeSeconds: the Lease records its duration in whole
// seconds (leaseDurationSeconds, truncated), and the other replicas wait
// only that long before they take it over. A lease under a second is
// recorded as 0, which they take over at once; a fractional one would
// leave this replica's fence open past the time they wait. Both are
// refused, by Validate and by the fence's constructor.
func TestLeaseDurationInWholeSeconds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string // "" for valid
	}{
		{"whole seconds", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 2*time.Second, time.Second, 100*time.Millisecond
		}, ""},
		{"under a second", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 900*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
		}, "--leader-elect-lease-duration: 900ms is not a whole number of seconds"},
		{"fractional", func(o *Options) {
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod, o.FenceMargin = 2500*time.Millisecond, time.Second, 100*time.Millisecond, time.Second
		}, "--leader-elect-lease-duration: 2.5s is not a whole number of seconds"},
		{"fractional without leader election", func(o *Options) { o.LeaderElect, o.LeaseDuration = false, 2500*time.Millisecond }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := valid()
			tc.change(&o)
			err := o.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want one containing %q", err, tc.want)
			}
			if _, err := newLeaderFence(o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("newLeaderFence: %v, want one containing %q", err, tc.want)
			}
		})
	}
}
