package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// apiLoad is what the API server and etcd had done at one moment: the
// API server's request and watch-event counters, its open watches, and
// the CPU time of both processes. The difference of two apiLoads taken
// around a scheduler's run is what that run cost them, with what the
// workload does once the scheduler has started (the same for both
// schedulers): not the namespace, nodes and pods it made before.
type apiLoad struct {
	requests    map[string]float64 // "VERB resource[/subresource]"
	seconds     map[string]float64 // the same requests' total time in the API server
	watchEvents map[string]float64 // by resource
	// watchBytes are the watch events' bytes by resource, and
	// responseBytes the responses' by request: what the scheduler's
	// content types and objects cost to send.
	watchBytes    map[string]float64
	responseBytes map[string]float64
	admission     map[string]float64 // seconds in each admission plugin ("name type")
	watches       map[string]float64 // open watches by resource (a gauge)
	apiCPU        time.Duration
	etcdCPU       time.Duration
	selfCPU       time.Duration // compare-e2e's own: its watch and the workload's requests
}

// snapshotAPILoad reads the API server's /metrics and both processes' CPU
// times. O(size of the metrics text).
func snapshotAPILoad(ctx context.Context, client kubernetes.Interface, apiPID, etcdPID int) (apiLoad, error) {
	body, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiLoad{}, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	l := parseAPILoad(string(body), procCPU(apiPID), procCPU(etcdPID))
	l.selfCPU = procCPU(os.Getpid())
	return l, nil
}

// parseAPILoad reads an apiLoad from the API server's metrics text.
// O(len(text)).
func parseAPILoad(text string, apiCPU, etcdCPU time.Duration) apiLoad {
	l := apiLoad{requests: map[string]float64{}, seconds: map[string]float64{}, admission: map[string]float64{}, watchEvents: map[string]float64{},
		watchBytes: map[string]float64{}, responseBytes: map[string]float64{}, watches: map[string]float64{}, apiCPU: apiCPU, etcdCPU: etcdCPU}
	eachSample(text, "apiserver_request_total", func(labels string, v float64) {
		l.requests[requestKey(labels)] += v
	})
	eachSample(text, "apiserver_request_duration_seconds_sum", func(labels string, v float64) {
		l.seconds[requestKey(labels)] += v
	})
	eachSample(text, "apiserver_admission_controller_admission_duration_seconds_sum", func(labels string, v float64) {
		l.admission[labelValue(labels, "name")+" "+labelValue(labels, "type")] += v
	})
	eachSample(text, "apiserver_watch_events_total", func(labels string, v float64) {
		r := labelValue(labels, "resource")
		if r == "" {
			r = labelValue(labels, "kind")
		}
		l.watchEvents[r] += v
	})
	eachSample(text, "apiserver_watch_events_sizes_sum", func(labels string, v float64) {
		l.watchBytes[labelValue(labels, "resource")] += v
	})
	eachSample(text, "apiserver_response_sizes_sum", func(labels string, v float64) {
		l.responseBytes[requestKey(labels)] += v
	})
	eachSample(text, "apiserver_longrunning_requests", func(labels string, v float64) {
		if labelValue(labels, "verb") == "WATCH" {
			l.watches[labelValue(labels, "resource")] += v
		}
	})
	return l
}

// requestKey is "VERB resource[/subresource]" of a request metric's labels.
func requestKey(labels string) string {
	key := labelValue(labels, "verb") + " " + labelValue(labels, "resource")
	if sub := labelValue(labels, "subresource"); sub != "" {
		key += "/" + sub
	}
	return key
}

// eachSample calls f with the labels and value of each sample of the
// metric name. O(len(text)).
func eachSample(text, name string, f func(labels string, v float64)) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		i := strings.LastIndex(rest, " ")
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(rest[i+1:], 64)
		if err != nil {
			continue
		}
		f(rest[:i], v)
	}
}

// since returns what happened between before and l (watches: l's open
// watches less before's).
func (l apiLoad) since(before apiLoad) apiLoad {
	d := apiLoad{requests: diff(l.requests, before.requests), seconds: diff(l.seconds, before.seconds), admission: diff(l.admission, before.admission), watchEvents: diff(l.watchEvents, before.watchEvents),
		watchBytes: diff(l.watchBytes, before.watchBytes), responseBytes: diff(l.responseBytes, before.responseBytes),
		watches: diff(l.watches, before.watches), apiCPU: l.apiCPU - before.apiCPU, etcdCPU: l.etcdCPU - before.etcdCPU, selfCPU: l.selfCPU - before.selfCPU}
	return d
}

func diff(after, before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// procCPU is the user plus system CPU time of a process so far, from
// /proc (0 if it cannot be read).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: fields count from
	// after its closing parenthesis, where field 3 (state) is the first.
	s := string(b)
	f := strings.Fields(s[strings.LastIndex(s, ")")+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// printAPILoad prints, for each run, the CPU the API server, etcd and the
// scheduler used per pod and the bytes the scheduler allocated, the requests per pod by verb and resource, the
// watch events sent per pod and the watches the scheduler opened.
// Requests under 0.005 per pod are left out. O(results × keys).
func printAPILoad(w io.Writer, results []result) {
	fmt.Fprintln(w, "\nper pod, from the API server's /metrics and /proc, from the scheduler's start (the workload's requests from then on included):")
	for _, r := range results {
		if r.err != nil || r.pods == 0 {
			continue
		}
		n := float64(r.pods)
		perPod := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000/n) }
		fmt.Fprintf(w, "  %s / %s: CPU kube-apiserver %s, etcd %s, scheduler %s, compare-e2e %s; the scheduler allocated %.1f KB\n", r.workload, r.scheduler,
			perPod(r.load.apiCPU), perPod(r.load.etcdCPU), perPod(r.schedCPU), perPod(r.load.selfCPU), r.schedAlloc/1024/n)
		fmt.Fprintf(w, "    requests: %s\n", perPodCounts(r.load.requests, n, 0.005))
		fmt.Fprintf(w, "    mean time in the API server: %s\n", meanTimes(r.load, n, 0.005))
		fmt.Fprintf(w, "    admission plugins' time (ms): %s\n", perPodCounts(scaled(r.load.admission, 1000), n, 0.005))
		fmt.Fprintf(w, "    watch events sent: %s\n", perPodCounts(r.load.watchEvents, n, 0.005))
		fmt.Fprintf(w, "    bytes sent (KB): watch events %s; responses %s\n", noneIfEmpty(perPodCounts(scaled(r.load.watchBytes, 1.0/1024), n, 0.005)), noneIfEmpty(perPodCounts(scaled(r.load.responseBytes, 1.0/1024), n, 0.005)))
		fmt.Fprintf(w, "    watches open at the end, beyond those open before the scheduler started: %s\n", formatCounts(r.load.watches))
	}
}

// noneIfEmpty is s, or "none" if s is empty.
func noneIfEmpty(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// perPodCounts prints counts divided by n, largest first, leaving out
// those under min.
func perPodCounts(m map[string]float64, n, min float64) string {
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v/n >= min {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			if m[a] > m[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f", k, m[k]/n)
	}
	return strings.Join(parts, ", ")
}

// meanTimes prints the mean time the API server took over each kind of
// request made at least min times per pod.
func meanTimes(l apiLoad, n, min float64) string {
	var parts []string
	for _, k := range sortedKeys(l.requests) {
		if c := l.requests[k]; c/n >= min {
			parts = append(parts, fmt.Sprintf("%s %.1f ms", k, 1000*l.seconds[k]/c))
		}
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// scaled returns m with every value multiplied by f.
func scaled(m map[string]float64, f float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v * f
	}
	return out
}

// pairResult is one workload's pair of runs, as printPairs sums it up.
type pairResult struct {
	workload string
	pair     int
	// first is the scheduler that ran first.
	first string
	// ratio is schedq's pods/s over kube-scheduler's.
	ratio float64
	// cpu is each run's CPU per pod of the API server, etcd, the
	// scheduler and compare-e2e together, in ms: [kube-scheduler's run,
	// schedq's run]. Where the machine's CPU sets the pace, pods/s go as
	// its inverse, and cpu[0]/cpu[1] is the ratio that CPU allows.
	cpu [2]float64
}

// pairResults matches each workload's kube-scheduler run with schedq's
// run of the same pair, leaving out pairs with a failed or missing run.
// O(results).
func pairResults(results []result) []pairResult {
	type key struct {
		workload string
		pair     int
	}
	runs := map[key][2]*result{}
	var order []key
	for i := range results {
		r := &results[i]
		k := key{r.workload, r.pair}
		two, seen := runs[k]
		if !seen {
			order = append(order, k)
		}
		if r.scheduler == "schedq" {
			two[1] = r
		} else {
			two[0] = r
		}
		runs[k] = two
	}
	var out []pairResult
	for _, k := range order {
		two := runs[k]
		if two[0] == nil || two[1] == nil || two[0].err != nil || two[1].err != nil || two[0].pods == 0 || two[1].pods == 0 {
			continue
		}
		p := pairResult{workload: k.workload, pair: k.pair, first: two[0].scheduler}
		if two[1].position == 1 {
			p.first = two[1].scheduler
		}
		rate := func(r *result) float64 { return float64(r.pods) / r.elapsed.Seconds() }
		p.ratio = rate(two[1]) / rate(two[0])
		for i, r := range two {
			total := r.load.apiCPU + r.load.etcdCPU + r.schedCPU + r.load.selfCPU
			p.cpu[i] = float64(total.Microseconds()) / 1000 / float64(r.pods)
		}
		out = append(out, p)
	}
	return out
}

// printPairs prints, for each workload and pair, schedq's pods/s over
// kube-scheduler's, who ran first, and the CPU per pod of the four
// processes in each run with the ratio it allows; then, for a workload
// run in more than one pair, the median ratio.
func printPairs(w io.Writer, results []result) {
	pairs := pairResults(results)
	if len(pairs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nschedq's pods/s over kube-scheduler's, and the CPU per pod of kube-apiserver, etcd, the scheduler and compare-e2e together (kube-scheduler's run, schedq's), whose ratio is what the machine's CPU allows:")
	ratios := map[string][]float64{}
	var names []string
	for _, p := range pairs {
		if _, ok := ratios[p.workload]; !ok {
			names = append(names, p.workload)
		}
		ratios[p.workload] = append(ratios[p.workload], p.ratio)
		fmt.Fprintf(w, "  %s, pair %d (%s first): %.2f; CPU %.2f ms, %.2f ms: %.2f\n", p.workload, p.pair, p.first, p.ratio, p.cpu[0], p.cpu[1], p.cpu[0]/p.cpu[1])
	}
	for _, name := range names {
		if rs := ratios[name]; len(rs) > 1 {
			fmt.Fprintf(w, "  %s: median %.2f, geometric mean %.2f over %d pairs (%.2f-%.2f)\n", name, median(rs), geomean(rs), len(rs), slices.Min(rs), slices.Max(rs))
		}
	}
}

// geomean is the geometric mean of xs (all above 0, not empty): for
// ratios, that of schedq's pods/s over all pairs over kube-scheduler's,
// which a load rising or falling evenly through alternated pairs leaves
// unchanged. O(n).
func geomean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += math.Log(x)
	}
	return math.Exp(sum / float64(len(xs)))
}

// median is the median of xs (the mean of the middle two if even), xs
// not empty. O(n log n).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
