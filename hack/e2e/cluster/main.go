package cluster

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// required reports whether SCHEDQ_E2E=required: missing binaries are then
// an error instead of a reason to skip.
func required() bool { return strings.EqualFold(os.Getenv(EnvE2E), "required") }

// disabled reports whether SCHEDQ_E2E=off.
func disabled() bool { return strings.EqualFold(os.Getenv(EnvE2E), "off") }

// Main is for a test package's TestMain. It starts one cluster, passes it
// to setup (which typically stores it in a package variable), runs the
// tests, prints the end of the server logs if any test failed, stops the
// cluster and exits with the tests' status.
//
// If the server binaries are missing, Main skips the package (see
// skipPackage: go test's "ok" line then ends in "[no tests to run]"),
// unless SCHEDQ_E2E=required, in which case it fails. SCHEDQ_E2E=off, or
// -short without SCHEDQ_E2E=required, skips the package without starting
// anything. Any other start failure fails the package.
func Main(m *testing.M, setup func(*Cluster)) {
	os.Exit(runMain(m, Options{}, setup))
}

// MainWith is Main with options for the cluster (Logf is set by Main).
func MainWith(m *testing.M, opts Options, setup func(*Cluster)) {
	os.Exit(runMain(m, opts, setup))
}

func runMain(m *testing.M, opts Options, setup func(*Cluster)) int {
	pkg := testPackage()
	if !flag.Parsed() {
		flag.Parse()
	}
	if disabled() {
		skipPackage(pkg, fmt.Sprintf("end-to-end tests disabled (%s=off)", EnvE2E))
		return 0
	}
	if testing.Short() && !required() {
		skipPackage(pkg, "end-to-end tests skipped in -short mode")
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	opts.Logf = func(format string, args ...any) {
		if testing.Verbose() {
			fmt.Printf("cluster: "+format+"\n", args...)
		}
	}
	c, err := Start(ctx, opts)
	if err != nil {
		if errors.Is(err, ErrMissingBinary) && !required() {
			skipPackage(pkg, fmt.Sprintf("end-to-end tests need the server binaries: %v "+
				"(set %s=required to make this a failure)", err, EnvE2E))
			return 0
		}
		fmt.Printf("FAIL: %s: starting the test cluster: %v\n", pkg, err)
		return 1
	}
	defer c.Stop()
	if testing.Verbose() {
		fmt.Printf("cluster: etcd and kube-apiserver ready in %v (%s, dir %s)\n",
			time.Since(start).Round(time.Millisecond), c.Host(), c.Dir())
	}
	if setup != nil {
		setup(c)
	}
	code := m.Run()
	if code != 0 {
		fmt.Print(c.LogTails(50))
	}
	return code
}

// ForTest starts a cluster for one test and stops it when the test ends
// (printing the end of the server logs first if the test failed). Missing
// binaries skip the test, or fail it under SCHEDQ_E2E=required.
// Use it for tests that must not share a cluster, such as ones that
// restart the API server while other tests watch it.
func ForTest(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if disabled() {
		Skip(t, fmt.Sprintf("end-to-end tests disabled (%s=off)", EnvE2E))
	}
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	c, err := Start(t.Context(), opts)
	if err != nil {
		if errors.Is(err, ErrMissingBinary) {
			Missing(t, err)
		}
		t.Fatalf("starting the test cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(c.LogTails(50))
		}
		c.Stop()
	})
	return c
}
