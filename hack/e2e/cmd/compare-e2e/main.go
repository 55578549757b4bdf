// Command compare-e2e runs kube-scheduler and schedq one after the other
// against the same real kube-apiserver, with the same workloads, and
// prints one table: pods/s (from the scheduler's start to its last
// binding), its first binding (the start-up that pods/s includes), time to
// bind (p50, p99), scheduling attempts
// per pod (read from each scheduler's metrics endpoint) and the
// scheduler's peak memory; below it, what each run cost the API server and
// etcd per pod: their CPU, the requests by verb and resource, the watch
// events sent and the watches opened (apiload.go).
//
//	export SCHEDQ_BIN="$(hack/build-servers.sh | tail -n 1)"
//	go run ./hack/e2e/cmd/compare-e2e            # or: make compare-e2e
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/schedq/schedq/hack/e2e/cluster"
)

func main() {
	scale := flag.Float64("scale", 1, "multiply every workload's size (0.1 for a quick run)")
	only := flag.String("only", "", "run only workloads whose name contains this")
	fence := flag.Bool("fence", false, "run both schedulers with leader election, and schedq's bindings under the binding fence of deploy/schedq.yaml (to measure what the fence costs; use with one workload, as a scheduler started again waits for its old lease)")
	first := flag.String("first", "alternate", "which scheduler runs each workload first: alternate (kube-scheduler on the 1st, 3rd... workload, schedq on the others, and the other way round in each next pair), kube-scheduler or schedq")
	pairs := flag.Int("pairs", 1, "run each workload this many times with each scheduler, on the same servers; with -first alternate, the scheduler that goes first changes from one pair to the next")
	flag.Parse()
	selected, err := checkFlags(*scale, *only, *first, *fence, *pairs, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare-e2e:", err)
		os.Exit(2)
	}
	if err := run(selected, *first, *fence, *pairs); err != nil {
		fmt.Fprintln(os.Stderr, "compare-e2e:", err)
		os.Exit(1)
	}
}

// checkFlags checks every flag before anything starts, and returns the
// workloads -only picks at -scale.
func checkFlags(scale float64, only, first string, fence bool, pairs int, args []string) ([]workload, error) {
	if len(args) > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every setting is a flag (-scale, -only, -first, -fence, -pairs)", args[0])
	}
	if pairs < 1 {
		return nil, fmt.Errorf("-pairs %d: must be 1 or more", pairs)
	}
	if fence && pairs > 1 {
		return nil, fmt.Errorf("-fence runs each scheduler once (a scheduler started again waits for its old lease): -pairs %d", pairs)
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return nil, fmt.Errorf("-scale %v: must be a number more than 0", scale)
	}
	if first != "alternate" && first != "kube-scheduler" && first != "schedq" {
		return nil, fmt.Errorf("-first %q: want alternate, kube-scheduler or schedq", first)
	}
	var selected []workload
	var names, all []string
	for _, w := range workloads(scale) {
		all = append(all, w.name)
		if only == "" || strings.Contains(w.name, only) {
			selected = append(selected, w)
			names = append(names, w.name)
		}
	}
	if len(selected) == 0 {
		return nil, fmt.Errorf("-only %q: no workload's name contains it (workloads: %s)", only, strings.Join(all, ", "))
	}
	if fence && len(selected) > 1 {
		return nil, fmt.Errorf("-fence runs one workload (a scheduler started again waits for its old lease): -only picks %d (%s)", len(selected), strings.Join(names, ", "))
	}
	return selected, nil
}

// runsFailed says how many runs failed, as an error (nil if none did).
func runsFailed(results []result) error {
	failed := 0
	for _, r := range results {
		if r.err != nil {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d runs failed (see the table)", failed, len(results))
	}
	return nil
}

// scheduler is one of the two contestants.
type scheduler struct {
	name string // as printed
	// podScheduler is the spec.schedulerName its pods carry.
	podScheduler string
	// start returns the scheduler's command; extra are the workload's
	// kubeSchedulerFlags (schedq ignores them).
	start      func(ctx context.Context, addr string, extra []string) (*exec.Cmd, error)
	metricsURL func(addr string) string
}

// result is what one run of one workload measured.
type result struct {
	workload, scheduler string
	pods                int
	elapsed             time.Duration
	// firstBind is from the scheduler's start to its first binding: its
	// start-up, which elapsed (to the last binding) includes.
	firstBind time.Duration
	p50, p99  time.Duration
	attempts  float64
	peakRSS   int64 // bytes
	// load is what the run cost the API server and etcd (apiload.go);
	// schedCPU is the scheduler's own CPU time; schedAlloc the bytes it
	// allocated (go_memstats_alloc_bytes_total: its garbage collector's
	// work goes with it), 0 if its metrics do not say.
	load       apiLoad
	schedCPU   time.Duration
	schedAlloc float64
	report     report
	err        error
	// position is 1 if this scheduler ran the workload first, 2 if second:
	// a machine whose load changes favours one of the two.
	position int
	// pair is which of -pairs runs of the workload this is, from 1.
	pair int
}

// The client rate limits both schedulers get, for every client.
const apiQPS, apiBurst = "1000", "2000"

// kubeSchedulerArgs is kube-scheduler's command line: what schedqArgs
// gives schedq (kubeconfig, leader election, rate limits), its serving
// address, the workload's extra flags, and no contention profiling. That
// is on by default with profiling (runtime.SetBlockProfileRate(1): a
// stack recorded at every blocking event), a cost of kube-scheduler's
// debug endpoints that schedq, which has none, does not pay.
func kubeSchedulerArgs(kubeconfig string, leaderElect bool, addr string, extra []string) []string {
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"--kubeconfig=" + kubeconfig, fmt.Sprintf("--leader-elect=%t", leaderElect),
		"--bind-address=127.0.0.1", "--secure-port=" + port,
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--kube-api-qps=" + apiQPS, "--kube-api-burst=" + apiBurst, "--contention-profiling=false"}
	return append(args, extra...)
}

// schedqArgs is schedq's command line (see kubeSchedulerArgs).
func schedqArgs(kubeconfig string, leaderElect bool, addr string) []string {
	return []string{"scheduler", "--kubeconfig=" + kubeconfig, fmt.Sprintf("--leader-elect=%t", leaderElect),
		"--address=" + addr, "--kube-api-qps=" + apiQPS, "--kube-api-burst=" + apiBurst}
}

// runOrder returns the contestants (kube-scheduler, schedq) in the order
// they run the i-th workload in the p-th pair (both from 0): with first
// "alternate", kube-scheduler first where i+p is even and schedq first
// where it is odd, so that each workload's order changes from one pair to
// the next, one workload alone included.
func runOrder(c []scheduler, i, p int, first string) []scheduler {
	if first == "schedq" || (first == "alternate" && (i+p)%2 == 1) {
		return []scheduler{c[1], c[0]}
	}
	return c
}

func run(selected []workload, first string, fence bool, pairs int) error {
	ctx := context.Background()
	var apiFlags []string
	for _, w := range selected {
		apiFlags = append(apiFlags, w.apiServerFlags...)
	}
	fmt.Fprintln(os.Stderr, "starting etcd and kube-apiserver", strings.Join(apiFlags, " "), "...")
	cl, err := cluster.Start(ctx, cluster.Options{APIServerFlags: apiFlags})
	if err != nil {
		return err
	}
	defer cl.Stop()
	cfg := cl.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 2000
	if fence {
		// The policy refuses every binding, kube-scheduler's unstamped ones
		// too, while its Lease does not exist: create it, with no holder,
		// for schedq to take.
		if err := createLease(ctx, cfg, "kube-system", "schedq"); err != nil {
			return err
		}
		remove, err := cl.ApplyBindingFence(ctx, "kube-system", "schedq")
		if err != nil {
			return err
		}
		defer remove()
	}
	kubeScheduler, err := cl.SchedulerBinary()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "compare-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	schedqBin := filepath.Join(tmp, "schedq")
	fmt.Fprintln(os.Stderr, "building schedq ...")
	if out, err := exec.Command("go", "build", "-o", schedqBin, "github.com/schedq/schedq/kube/cmd/schedq").CombinedOutput(); err != nil {
		return fmt.Errorf("go build schedq: %v\n%s", err, out)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	logs := func(name string) (*os.File, error) { return os.Create(filepath.Join(cl.Dir(), name+".log")) }
	contestants := []scheduler{
		{
			name: binaryLabel("kube-scheduler", kubeScheduler), podScheduler: "default-scheduler",
			start: func(ctx context.Context, addr string, extra []string) (*exec.Cmd, error) {
				return exec.CommandContext(ctx, kubeScheduler, kubeSchedulerArgs(cl.Kubeconfig(), fence, addr, extra)...), nil
			},
			metricsURL: func(addr string) string { return "https://" + addr + "/metrics" },
		},
		{
			name: "schedq", podScheduler: "schedq",
			start: func(ctx context.Context, addr string, _ []string) (*exec.Cmd, error) {
				return exec.CommandContext(ctx, schedqBin, schedqArgs(cl.Kubeconfig(), fence, addr)...), nil
			},
			metricsURL: func(addr string) string { return "http://" + addr + "/metrics" },
		},
	}
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	token := cl.Token()

	var results []result
	for p := range pairs {
		for i, w := range selected {
			for pos, s := range runOrder(contestants, i, p, first) {
				fmt.Fprintf(os.Stderr, "%s on %s (pair %d of %d) ...\n", w.name, s.name, p+1, pairs)
				r := result{workload: w.name, scheduler: s.name, position: pos + 1, pair: p + 1}
				var leftover error
				r.err = func() error {
					env := &env{client: client, ns: runNamespace(w.name, s.podScheduler, p), scheduler: s.podScheduler}
					defer func() { leftover = env.cleanup() }()
					if err := env.setup(); err != nil {
						return err
					}
					if err := w.prepare(env); err != nil {
						return err
					}
					addr, err := freeAddr()
					if err != nil {
						return err
					}
					sctx, cancel := context.WithCancel(ctx)
					defer cancel()
					cmd, _ := s.start(sctx, addr, w.kubeSchedulerFlags)
					logf, err := logs(env.ns)
					if err != nil {
						return err
					}
					defer logf.Close()
					cmd.Stdout, cmd.Stderr = logf, logf
					watchCtx, stopWatch := context.WithCancel(ctx)
					defer stopWatch()
					if err := env.watchBindings(watchCtx); err != nil {
						return err
					}
					loadBefore, err := snapshotAPILoad(ctx, client, cl.APIServerPID(), cl.EtcdPID())
					if err != nil {
						return err
					}
					begin := time.Now()
					if err := cmd.Start(); err != nil {
						return err
					}
					exited := make(chan struct{})
					var exit error
					go func() {
						exit = cmd.Wait()
						close(exited)
					}()
					defer func() {
						cmd.Process.Signal(os.Interrupt)
						<-exited
					}()
					if err := w.drive(env, begin); err != nil {
						return fmt.Errorf("%w (log: %s)", err, logf.Name())
					}
					if err := env.waitAll(exited, 10*time.Minute); err != nil {
						if errors.Is(err, errExited) {
							err = fmt.Errorf("%w (%v)", err, exit)
						}
						return fmt.Errorf("%w (log: %s)", err, logf.Name())
					}
					first, last := env.bindSpan()
					r.elapsed, r.firstBind = last.Sub(begin), first.Sub(begin)
					r.pods = len(env.pods)
					r.p50, r.p99 = env.percentiles()
					r.peakRSS = peakRSS(cmd.Process.Pid)
					r.schedCPU = procCPU(cmd.Process.Pid)
					loadAfter, err := snapshotAPILoad(ctx, client, cl.APIServerPID(), cl.EtcdPID())
					if err != nil {
						return err
					}
					r.load = loadAfter.since(loadBefore)
					metrics, err := scrape(httpc, s.metricsURL(addr), token)
					if err != nil {
						return err
					}
					r.attempts = metricSum(metrics, "scheduler_schedule_attempts_total")
					r.schedAlloc = metricSum(metrics, "go_memstats_alloc_bytes_total")
					if w.report != nil {
						r.report = w.report(env, metrics)
					}
					return nil
				}()
				if r.err != nil {
					fmt.Fprintf(os.Stderr, "  %v\n", r.err)
				}
				results = append(results, r)
				if leftover != nil {
					// The next runs would share the cluster with what is left.
					print(os.Stdout, results)
					return fmt.Errorf("%s on %s: %w; stopped, as the next runs would see what is left", w.name, s.name, leftover)
				}
			}
		}
	}
	print(os.Stdout, results)
	return runsFailed(results)
}

func print(w io.Writer, results []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tscheduler\tran\tpods\tpods/s\tfirst bind\ttime to bind p50\tp99\tattempts/pod\tpeak RSS\t")
	for _, r := range results {
		ran := [...]string{"", "1st", "2nd"}[r.position]
		if r.pair > 1 {
			ran = fmt.Sprintf("%s (pair %d)", ran, r.pair)
		}
		if r.err != nil {
			fmt.Fprintf(tw, "%s\t%s\t%s\t\tfailed: %v\t\t\t\t\t\t\n", r.workload, r.scheduler, ran, r.err)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.0f\t%v\t%v\t%v\t%.2f\t%d MiB\t\n", r.workload, r.scheduler, ran, r.pods,
			float64(r.pods)/r.elapsed.Seconds(), r.firstBind.Round(time.Millisecond), r.p50.Round(time.Millisecond), r.p99.Round(time.Millisecond),
			r.attempts/float64(r.pods), r.peakRSS>>20)
	}
	tw.Flush()
	printReports(w, results)
	printAPILoad(w, results)
	printPairs(w, results)
}

// scrape returns the text of a scheduler's metrics endpoint.
func scrape(c *http.Client, url, token string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metrics %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// peakRSS is the process's high-water resident set size, from /proc.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// runNamespace is the namespace of a run of workload by the scheduler
// named podScheduler in the p-th pair (from 0): a pair's own, since a
// deleted namespace stays terminating with no controller to finish it.
func runNamespace(workload, podScheduler string, p int) string {
	if p == 0 {
		return sanitize(workload + "-" + podScheduler)
	}
	return sanitize(fmt.Sprintf("%s-%s-%d", workload, podScheduler, p+1))
}

func sanitize(s string) string {
	s = strings.ToLower(strings.NewReplacer(" ", "-", ".", "-", "_", "-").Replace(s))
	if len(s) > 60 {
		s = s[:60]
	}
	return strings.Trim(s, "-")
}

// env is one workload's namespace, nodes and pods, and the bindings
// observed through a watch.
type env struct {
	client    kubernetes.Interface
	ns        string
	scheduler string
	nodes     []string
	pods      []string

	mu      sync.Mutex
	ref     map[string]time.Time // when each pod could first be scheduled
	boundAt map[string]time.Time
	// gone holds each pod first seen terminating or deleted, as last seen.
	gone map[string]*v1.Pod
}

func (e *env) setup() error {
	e.ref, e.boundAt, e.gone = map[string]time.Time{}, map[string]time.Time{}, map[string]*v1.Pod{}
	_, err := e.client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{})
	return err
}

// cleanup deletes the run's pods, nodes and namespace. An error means
// that some are left, which the next runs' schedulers would see (nodes
// are cluster-wide: the next workload's pods could land on them).
func (e *env) cleanup() error {
	ctx := context.Background()
	zero := int64(0)
	var errs []error
	gone := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", what, err))
		}
	}
	gone("the pods of "+e.ns, e.client.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{}))
	for _, n := range e.nodes {
		gone("node "+n, e.client.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}))
	}
	gone("namespace "+e.ns, e.client.CoreV1().Namespaces().Delete(ctx, e.ns, metav1.DeleteOptions{}))
	return errors.Join(errs...)
}

// addNodes creates nodes with cpu/memory and a 110-pod capacity.
func (e *env) addNodes(prefix string, count int, cpu, memory string) error {
	for i := range count {
		name := fmt.Sprintf("%s-%s-%d", e.ns, prefix, i)
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory), v1.ResourcePods: resource.MustParse("110")}
		n := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status:     v1.NodeStatus{Capacity: rl, Allocatable: rl, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}},
		}
		if _, err := e.client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			return err
		}
		e.nodes = append(e.nodes, name)
	}
	return nil
}

// addPods creates pods, 16 at a time; change adjusts each before creation.
func (e *env) addPods(prefix string, count int, cpu string, change func(*v1.Pod)) error {
	_, err := e.addPodsFrom(prefix, 0, count, cpu, change)
	return err
}

// addPodsFrom creates the pods prefix-from to prefix-(to-1) as addPods
// does, and returns their names.
func (e *env) addPodsFrom(prefix string, from, to int, cpu string, change func(*v1.Pod)) ([]string, error) {
	count := to - from
	names := make([]string, count)
	errs := make(chan error, count)
	work := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range work {
				names[i] = fmt.Sprintf("%s-%d", prefix, from+i)
				p := &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: names[i], Labels: map[string]string{"group": prefix}},
					Spec: v1.PodSpec{SchedulerName: e.scheduler, Containers: []v1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
						Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}}}}},
				}
				if change != nil {
					change(p)
				}
				if _, err := e.client.CoreV1().Pods(e.ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range count {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.pods = append(e.pods, names...)
	e.mu.Unlock()
	return names, nil
}

// readyAt records when pods became schedulable (created, or ungated).
func (e *env) readyAt(t time.Time, names ...string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, n := range names {
		e.ref[n] = t
	}
}

// watchBindings records when each pod is first seen bound, through an
// informer (whose reflector re-watches if the API server drops a watch).
func (e *env) watchBindings(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(e.client, 0, informers.WithNamespace(e.ns))
	inf := factory.Core().V1().Pods().Informer()
	seen := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok || (p.Spec.NodeName == "" && p.DeletionTimestamp == nil) {
			return
		}
		e.mu.Lock()
		if _, done := e.boundAt[p.Name]; !done && p.Spec.NodeName != "" {
			e.boundAt[p.Name] = time.Now()
		}
		if _, done := e.gone[p.Name]; !done && p.DeletionTimestamp != nil {
			e.gone[p.Name] = p
		}
		e.mu.Unlock()
	}
	deleted := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*v1.Pod); ok {
			e.mu.Lock()
			if _, done := e.gone[p.Name]; !done {
				e.gone[p.Name] = p
			}
			e.mu.Unlock()
		}
	}
	handlers := cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, n any) { seen(n) }, DeleteFunc: deleted}
	if _, err := inf.AddEventHandler(handlers); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("pod informer of %s did not sync", e.ns)
		}
	}
	return nil
}

// errExited is waitAll's error when the scheduler exits first.
var errExited = errors.New("the scheduler exited")

// waitAll polls (every 50ms) until every pod is seen bound; it fails at
// once if exited closes (the scheduler's process ended), or after
// timeout, saying how many pods were bound.
func (e *env) waitAll(exited <-chan struct{}, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var bound, all int
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		e.mu.Lock()
		bound, all = len(e.boundAt), len(e.pods)
		e.mu.Unlock()
		if bound >= all {
			return true, nil
		}
		select {
		case <-exited:
			return false, errExited
		default:
			return false, nil
		}
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errExited):
		return fmt.Errorf("%w with %d of %d pods of %s bound", err, bound, all, e.ns)
	default:
		return fmt.Errorf("%d of %d pods of %s bound after %v", bound, all, e.ns, timeout)
	}
}

// bindSpan returns when the first and the last of the pods were bound.
func (e *env) bindSpan() (first, last time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, t := range e.boundAt {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last
}

func (e *env) percentiles() (time.Duration, time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ds []time.Duration
	for name, t := range e.boundAt {
		if ref, ok := e.ref[name]; ok {
			ds = append(ds, max(0, t.Sub(ref)))
		}
	}
	if len(ds) == 0 {
		return 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)]
}

// createLease creates the Lease namespace/name with no holder.
func createLease(ctx context.Context, cfg *rest.Config, namespace, name string) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := client.CoordinationV1().Leases(namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Lease %s/%s: %w", namespace, name, err)
	}
	return nil
}
