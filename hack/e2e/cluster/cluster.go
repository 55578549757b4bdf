// Package cluster runs a throwaway Kubernetes control plane for end-to-end
// tests: a real etcd and a real kube-apiserver, started as child processes on
// loopback ports, with nothing else (no kubelet, no controller manager).
//
// The binaries come from hack/build-servers.sh, which builds them from the
// versions pinned in hack/tools/go.mod into $SCHEDQ_BIN (default
// $HOME/.cache/schedq/bin).
//
// A test package normally starts one cluster for all its tests:
//
//	var c *cluster.Cluster
//
//	func TestMain(m *testing.M) {
//		cluster.Main(m, func(cl *cluster.Cluster) { c = cl })
//	}
//
// and tests that need a cluster of their own call ForTest.
package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Environment variables read by this package.
const (
	// EnvBin names the directory holding kube-apiserver, etcd and
	// kube-scheduler. Default: $HOME/.cache/schedq/bin.
	EnvBin = "SCHEDQ_BIN"
	// EnvE2E controls what happens when the binaries are missing:
	// "required" fails, "off" skips even if they are present, anything
	// else (including unset) skips with a message.
	EnvE2E = "SCHEDQ_E2E"
	// EnvKeep, when "1", keeps the cluster's temporary directory (data,
	// keys, logs) after Stop and prints its path.
	EnvKeep = "SCHEDQ_E2E_KEEP"
)

// BuildCommand is the command that builds the binaries this package runs.
const BuildCommand = "hack/build-servers.sh"

// ErrMissingBinary is wrapped by the error Start returns when a server
// binary cannot be found.
var ErrMissingBinary = errors.New("server binary not found")

// Options configure Start. The zero value is usable.
type Options struct {
	// BinDir holds the binaries. Default: $SCHEDQ_BIN, else
	// $HOME/.cache/schedq/bin.
	BinDir string
	// StartTimeout bounds how long Start and RestartAPIServer wait for a
	// server to become ready (on top of the context). Default 90s.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	// Default 15s.
	StopTimeout time.Duration
	// APIServerFlags are appended to the kube-apiserver command line; each
	// replaces the default of the same name, if any.
	APIServerFlags []string
	// Users are extra users, each with a token of its own (see
	// KubeconfigFor), so that the audit log tells their requests apart.
	// They are not in any group but system:authenticated; the main user
	// (RESTConfig) is in system:masters.
	Users []string
	// Audit turns on the API server's audit log (AuditLog) of bindings and
	// lease writes.
	Audit bool
	// Logf, if set, receives progress messages.
	Logf func(format string, args ...any)
}

// Cluster is a running etcd plus kube-apiserver. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts Options
	dir  string

	etcdBin, apiserverBin, schedulerBin string

	token      string
	userTokens map[string]string
	caPEM      []byte
	etcdURL    string
	etcdArgs   []string // of the running etcd, for a restart
	apiPort    int
	kubeconfig string

	startup time.Duration

	mu        sync.Mutex
	etcd      *process
	apiserver *process
	stopped   bool
}

// DefaultBinDir is where the binaries are looked for when neither
// Options.BinDir nor $SCHEDQ_BIN is set.
func DefaultBinDir() string {
	if d := os.Getenv(EnvBin); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "schedq", "bin")
	}
	return filepath.Join(home, ".cache", "schedq", "bin")
}

// FindBinary returns the path of the named server binary ("kube-apiserver",
// "etcd" or "kube-scheduler") in dir (DefaultBinDir if empty), or an error
// wrapping ErrMissingBinary that says how to build it.
func FindBinary(dir, name string) (string, error) {
	if dir == "" {
		dir = DefaultBinDir()
	}
	p := filepath.Join(dir, name)
	st, err := os.Stat(p)
	if err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return p, nil
	}
	return "", fmt.Errorf("%w: %s (build it from the repository root with `%s %s`, or set %s to the directory that has it)",
		ErrMissingBinary, p, BuildCommand, name, EnvBin)
}

// Start starts etcd and kube-apiserver and waits until the API server's
// /readyz succeeds. ctx bounds only the start-up; the servers run until
// Stop. On error nothing is left running and the error includes the end of
// the failing server's log.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	if opts.BinDir == "" {
		opts.BinDir = DefaultBinDir()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 15 * time.Second
	}
	c = &Cluster{opts: opts}
	if c.etcdBin, err = FindBinary(opts.BinDir, "etcd"); err != nil {
		return nil, err
	}
	if c.apiserverBin, err = FindBinary(opts.BinDir, "kube-apiserver"); err != nil {
		return nil, err
	}
	// kube-scheduler is optional: only SchedulerBinary needs it.
	c.schedulerBin, _ = FindBinary(opts.BinDir, "kube-scheduler")

	c.dir, err = os.MkdirTemp("", "schedq-e2e-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	if err := c.writeFiles(); err != nil {
		return nil, err
	}

	t0 := time.Now()
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	c.logf("etcd ready on %s after %v", c.etcdURL, time.Since(t0).Round(time.Millisecond))
	t1 := time.Now()
	if err := c.startAPIServer(ctx, true); err != nil {
		return nil, err
	}
	c.logf("kube-apiserver ready on %s after %v", c.Host(), time.Since(t1).Round(time.Millisecond))
	if err := c.writeKubeconfig(); err != nil {
		return nil, err
	}
	c.startup = time.Since(t0)
	return c, nil
}

func (c *Cluster) logf(format string, args ...any) {
	if c.opts.Logf != nil {
		c.opts.Logf(format, args...)
	}
}

// writeFiles creates the keys, the serving certificate and the token file.
func (c *Cluster) writeFiles() error {
	var err error
	if c.token, err = randomToken(); err != nil {
		return err
	}
	// Token file format: token,user,uid[,"group1,group2"].
	tokens := fmt.Sprintf("%s,schedq-e2e,schedq-e2e,\"system:masters\"\n", c.token)
	c.userTokens = map[string]string{}
	for _, u := range c.opts.Users {
		tok, err := randomToken()
		if err != nil {
			return err
		}
		c.userTokens[u] = tok
		tokens += fmt.Sprintf("%s,%s,%s\n", tok, u, u)
	}
	if c.opts.Audit {
		if err := os.WriteFile(c.path("audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile(c.path("tokens.csv"), []byte(tokens), 0o600); err != nil {
		return err
	}
	saKey, err := rsaKeyPEM()
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path("sa.key"), saKey, 0o600); err != nil {
		return err
	}
	certPEM, keyPEM, err := servingCert()
	if err != nil {
		return err
	}
	c.caPEM = certPEM
	if err := os.WriteFile(c.path("serving.crt"), certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(c.path("serving.key"), keyPEM, 0o600)
}

func (c *Cluster) path(name string) string { return filepath.Join(c.dir, name) }

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago. Another process can still take one before it is used; starts that
// fail with "address already in use" are retried with new ports.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

const portAttempts = 3

func (c *Cluster) startEtcd(ctx context.Context) error {
	extra := etcdExtraFlags(c.etcdBin)
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		dataDir := c.path("etcd-data")
		if err := os.RemoveAll(dataDir); err != nil {
			return err
		}
		args := append([]string{
			"--name=schedq-e2e",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=schedq-e2e=" + peer,
			"--initial-cluster-state=new",
			"--log-level=warn",
			// One member: a short election timeout only makes it
			// elect itself sooner (about 0.3 s instead of 1 s).
			"--heartbeat-interval=50",
			"--election-timeout=250",
		}, extra...)
		p, err := startProcess(c.etcdBin, args, c.path("etcd.log"))
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.etcd = p
		c.mu.Unlock()
		err = waitReady(ctx, c.opts.StartTimeout, p, func(ctx context.Context) error {
			return etcdHealthy(ctx, client)
		})
		if err == nil {
			c.etcdURL = client
			c.etcdArgs = args
			return nil
		}
		p.stop(c.opts.StopTimeout)
		lastErr = fmt.Errorf("etcd did not become ready: %w\n--- end of %s ---\n%s", err, p.logPath, p.logTail(40))
		if !p.portInUse() {
			return lastErr
		}
		c.logf("etcd: port taken, retrying with other ports")
	}
	return lastErr
}

// etcdExtraFlags adds flags that speed etcd up, if this etcd has them
// (3.5 and later do; Debian's 3.4 does not).
func etcdExtraFlags(bin string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := commandOutput(ctx, bin, "--help")
	var flags []string
	if strings.Contains(out, "--unsafe-no-fsync") {
		// Data is thrown away after the test: durability buys nothing.
		flags = append(flags, "--unsafe-no-fsync")
	}
	return flags
}

func etcdHealthy(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
		return fmt.Errorf("etcd /health: %s %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

func (c *Cluster) apiserverArgs() []string {
	args := []string{
		"--etcd-servers=" + c.etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.apiPort),
		"--cert-dir=" + c.path("apiserver-certs"),
		"--tls-cert-file=" + c.path("serving.crt"),
		"--tls-private-key-file=" + c.path("serving.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.path("sa.key"),
		"--service-account-signing-key-file=" + c.path("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=AlwaysAllow",
		"--token-auth-file=" + c.path("tokens.csv"),
		// TaintNodesByCondition would taint every new Node not-ready:NoSchedule,
		// and with no node controller nothing would ever lift the taint.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	if c.opts.Audit {
		args = append(args, "--audit-policy-file="+c.path("audit-policy.yaml"), "--audit-log-path="+c.AuditLog(),
			"--audit-log-format=json", "--audit-log-mode=blocking")
	}
	// A flag given again replaces the default: for list flags such as
	// --authorization-mode, kube-apiserver would append instead.
	for _, extra := range c.opts.APIServerFlags {
		name, _, _ := strings.Cut(extra, "=")
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, name+"=") })
	}
	return append(args, c.opts.APIServerFlags...)
}

// startAPIServer starts kube-apiserver and waits for /readyz. With
// newPort it picks a fresh port (and retries if the port was taken);
// otherwise it reuses c.apiPort, as a restart must.
func (c *Cluster) startAPIServer(ctx context.Context, newPort bool) error {
	var lastErr error
	for attempt := 0; attempt < portAttempts; attempt++ {
		if newPort {
			ports, err := freePorts(1)
			if err != nil {
				return err
			}
			c.apiPort = ports[0]
		}
		p, err := startProcess(c.apiserverBin, c.apiserverArgs(), c.path("kube-apiserver.log"))
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.apiserver = p
		c.mu.Unlock()
		client := c.httpClient()
		err = waitReady(ctx, c.opts.StartTimeout, p, func(ctx context.Context) error {
			return c.readyz(ctx, client)
		})
		client.CloseIdleConnections()
		if err == nil {
			return nil
		}
		p.stop(c.opts.StopTimeout)
		lastErr = fmt.Errorf("kube-apiserver did not become ready: %w\n--- end of %s ---\n%s", err, p.logPath, p.logTail(60))
		if !newPort || !p.portInUse() {
			return lastErr
		}
		c.logf("kube-apiserver: port taken, retrying with another port")
	}
	return lastErr
}

func (c *Cluster) httpClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caPEM)
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		},
	}
}

func (c *Cluster) readyz(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Host()+"/readyz", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, lastLines(string(body), 10))
	}
	return nil
}

// waitReady polls check until it succeeds, the process exits, timeout
// passes or ctx ends. The error carries the last check failure.
func waitReady(ctx context.Context, timeout time.Duration, p *process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		attemptCtx, attemptCancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(attemptCtx)
		attemptCancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v) before it was ready; last check: %v", filepath.Base(p.path), p.exitErr(), last)
		case <-ctx.Done():
			return fmt.Errorf("%w; last check: %v", ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// RestartAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after the
// stop timeout) and starts it again on the same port against the same
// etcd, then waits until it is ready. Clients made from RESTConfig keep
// working once it is back.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p, stopped := c.apiserver, c.stopped
	c.mu.Unlock()
	if stopped {
		return errors.New("cluster is stopped")
	}
	if p != nil {
		p.stop(c.opts.StopTimeout)
	}
	appendLine(c.path("kube-apiserver.log"), fmt.Sprintf("===== schedq e2e: restarting kube-apiserver at %s =====", time.Now().Format(time.RFC3339Nano)))
	return c.startAPIServer(ctx, false)
}

// StopAPIServer stops kube-apiserver and leaves etcd running; StartAPIServer
// (or RestartAPIServer) brings it back on the same port. For tests of
// behaviour while the API server is down.
func (c *Cluster) StopAPIServer() { c.stopProcess(&c.apiserver) }

// stopProcess stops the process *p holds, if any (SIGTERM, then SIGKILL
// after the stop timeout).
func (c *Cluster) stopProcess(p **process) {
	c.mu.Lock()
	proc := *p
	c.mu.Unlock()
	if proc != nil {
		proc.stop(c.opts.StopTimeout)
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer and waits
// until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p, stopped := c.apiserver, c.stopped
	c.mu.Unlock()
	if stopped {
		return errors.New("cluster is stopped")
	}
	if p != nil && !p.exited() {
		return errors.New("kube-apiserver is already running")
	}
	appendLine(c.path("kube-apiserver.log"), fmt.Sprintf("===== schedq e2e: starting kube-apiserver again at %s =====", time.Now().Format(time.RFC3339Nano)))
	return c.startAPIServer(ctx, false)
}

// Stop stops kube-apiserver, then etcd (each SIGTERM, then SIGKILL after
// the stop timeout), and removes the temporary directory unless
// SCHEDQ_E2E_KEEP=1. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	api, etcd := c.apiserver, c.etcd
	c.mu.Unlock()
	if api != nil {
		api.stop(c.opts.StopTimeout)
	}
	if etcd != nil {
		etcd.stop(c.opts.StopTimeout)
	}
	if c.dir == "" {
		return
	}
	if os.Getenv(EnvKeep) == "1" {
		fmt.Fprintf(os.Stderr, "cluster: %s=1: keeping %s\n", EnvKeep, c.dir)
		return
	}
	os.RemoveAll(c.dir)
}

// RESTConfig returns a new client config for the API server: bearer-token
// authentication (the user is in system:masters; authorization is
// AlwaysAllow anyway), TLS verified against the server's self-signed
// certificate, and QPS/Burst raised well above client-go's defaults.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:        c.Host(),
		BearerToken: c.token,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: append([]byte(nil), c.caPEM...),
		},
		QPS:   500,
		Burst: 1000,
	}
}

// Client returns a clientset made from RESTConfig.
func (c *Cluster) Client() (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(c.RESTConfig())
}

// Kubeconfig returns the path of a kubeconfig file for the cluster (same
// credentials as RESTConfig), for passing to a scheduler process with
// --kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

func (c *Cluster) writeKubeconfig() error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["schedq-e2e"] = &clientcmdapi.Cluster{
		Server:                   c.Host(),
		CertificateAuthorityData: c.caPEM,
	}
	cfg.AuthInfos["schedq-e2e"] = &clientcmdapi.AuthInfo{Token: c.token}
	cfg.Contexts["schedq-e2e"] = &clientcmdapi.Context{Cluster: "schedq-e2e", AuthInfo: "schedq-e2e"}
	cfg.CurrentContext = "schedq-e2e"
	c.kubeconfig = c.path("kubeconfig")
	return clientcmd.WriteToFile(*cfg, c.kubeconfig)
}

// StartupDuration is how long Start took from launching etcd until
// kube-apiserver was ready.
func (c *Cluster) StartupDuration() time.Duration { return c.startup }

// Host is the API server's URL, https://127.0.0.1:<port>.
func (c *Cluster) Host() string { return fmt.Sprintf("https://127.0.0.1:%d", c.apiPort) }

// Token is the bearer token accepted by the API server.
func (c *Cluster) Token() string { return c.token }

// EtcdURL is etcd's client URL.
func (c *Cluster) EtcdURL() string { return c.etcdURL }

// Dir is the cluster's temporary directory (keys, etcd data, logs). It is
// removed by Stop; files a test puts there go with it.
func (c *Cluster) Dir() string { return c.dir }

// APIServerLog and EtcdLog are the paths of the servers' log files.
func (c *Cluster) APIServerLog() string { return c.path("kube-apiserver.log") }

// EtcdLog is the path of etcd's log file.
func (c *Cluster) EtcdLog() string { return c.path("etcd.log") }

// SchedulerBinary is the path of kube-scheduler, for tests that compare
// schedq against it, or an error saying how to build it.
func (c *Cluster) SchedulerBinary() (string, error) {
	if c.schedulerBin != "" {
		return c.schedulerBin, nil
	}
	return FindBinary(c.opts.BinDir, "kube-scheduler")
}

// APIServerPID is the process id of the running kube-apiserver (0 if it is
// not running), e.g. for measuring its memory.
func (c *Cluster) APIServerPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiserver == nil || c.apiserver.exited() {
		return 0
	}
	return c.apiserver.cmd.Process.Pid
}

// EtcdPID is the process id of the running etcd (0 if it is not running).
func (c *Cluster) EtcdPID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.etcd == nil || c.etcd.exited() {
		return 0
	}
	return c.etcd.cmd.Process.Pid
}

// LogTails returns the last n lines of each server's log, for printing when
// a test fails.
func (c *Cluster) LogTails(n int) string {
	var b strings.Builder
	for _, p := range []string{c.EtcdLog(), c.APIServerLog()} {
		fmt.Fprintf(&b, "--- last %d lines of %s ---\n%s\n", n, p, fileTail(p, n))
	}
	return b.String()
}
