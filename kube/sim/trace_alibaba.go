package sim

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"github.com/schedq/schedq/kube/gpu"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedq/schedq/kube/framework"
)

// TraceSpec names a recorded workload to replay.
type TraceSpec struct {
	// Format is the trace's format: alibaba-gpu-v2023.
	Format string `yaml:"format"`
	// Dir holds the trace's files (relative to the current directory).
	Dir string `yaml:"dir"`
	// Nodes and Pods name the files in Dir; the defaults are the public
	// trace's openb_node_list_all_node.csv and openb_pod_list_default.csv.
	Nodes string `yaml:"nodes"`
	Pods  string `yaml:"pods"`
	// Speed brings arrivals closer: a pod created at t arrives at
	// t / Speed, and keeps its lifetime (and, if never bound, is deleted
	// that long after its arrival), so the load grows about Speed-fold.
	// Default 1: the trace's own times.
	Speed float64 `yaml:"speed"`
	// Order is the arrival order of a pod list without time columns
	// (name,cpu_milli,memory_mib,num_gpu,gpu_milli): "file" (the
	// default) or "random" (shuffled with the scenario's seed). Such pods
	// all arrive at the start and are never deleted.
	Order string `yaml:"order"`
	// QoSPriority gives the pods of each qos value (LS, BE, Burstable and
	// Guaranteed in the public trace) that priority; a pod whose qos is
	// empty or not listed has priority 0. Unset, every pod has priority 0
	// and the queue takes them in arrival order.
	QoSPriority map[string]int32 `yaml:"qosPriority"`
	// Namespaces is where the pods are: "default" (the default) puts them
	// all in namespace default; "qos" puts each in a namespace named after
	// its qos, lower-cased (ls, be, burstable, guaranteed), so that the
	// queue's fairness between namespaces shares it between QoS classes
	// and the report breaks the time to schedule down by qos. A pod
	// without qos stays in default.
	Namespaces string `yaml:"namespaces"`
	// from, if above zero, replays only the pods created at that second
	// of the trace or later, with their times counted from it (see
	// window); sim.Eval sets it to split the trace (EvalOptions.From).
	from int64
}

// TraceAlibabaGPU is the format of the Alibaba GPU cluster trace v2023
// ("openb" CSV files).
const TraceAlibabaGPU = "alibaba-gpu-v2023"

// How the Alibaba trace maps onto Kubernetes objects: GPUs are counted in
// thousandths of a GPU, so that a pod sharing a GPU (gpu_milli < 1000)
// requests a fraction of one, and a node's GPU model is a label that a
// pod's gpu_spec selects with required node affinity.
const (
	ResourceGPUMilli = "alibaba.com/gpu-milli"
	LabelGPUModel    = "alibaba.com/gpu-model"
	LabelQoS         = "alibaba.com/qos"
	traceGroup       = "trace"
)

// The labels a trace pod gets from its requests, for History to group
// runtimes by (the trace's pods have no owners): LabelGPURequest is its
// GPUs, "0" or num_gpu "x" gpu_milli ("1x470", "8x1000"), and
// LabelRequests all its requests, CPU, memory and GPUs
// ("3152m-5600Mi-1x1000"), which pods of one template share.
const (
	LabelGPURequest = "alibaba.com/gpu-request"
	LabelRequests   = "alibaba.com/requests"
)

// maxTraceFileBytes is the largest trace file read; a larger one is
// refused before it is read (a variable for tests).
var maxTraceFileBytes int64 = 64 << 20

// MaxTraceSpeed is the largest TraceSpec.Speed.
const MaxTraceSpeed = 1_000_000

// Limits on the rows of trace files.
const (
	maxTraceNodes    = 100_000
	maxTracePods     = 1_000_000
	maxGPUsPerObject = 64
)

var (
	nodeColumns = []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}
	podColumns  = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}
	// podColumnsShort is the column set of the trace's pod lists without
	// times, model constraints or QoS (the multi-GPU and GPU-sharing
	// lists, for example).
	podColumnsShort = podColumns[:5]
)

// Trace pod orders, for TraceSpec.Order.
const (
	TraceOrderFile   = "file"
	TraceOrderRandom = "random"
)

func (t *TraceSpec) validate(f string, bad func(string, string, ...any)) {
	if t.Format != TraceAlibabaGPU {
		bad(f+".format", "%q is not a known trace format (known: %s)", t.Format, TraceAlibabaGPU)
	}
	if t.Dir == "" {
		bad(f+".dir", "must not be empty")
	}
	if !(t.Speed >= 0 && t.Speed <= MaxTraceSpeed) { // NaN too
		bad(f+".speed", "must be from 0 (meaning 1) to %d, got %v", MaxTraceSpeed, t.Speed)
	}
	if t.Order != "" && t.Order != TraceOrderFile && t.Order != TraceOrderRandom {
		bad(f+".order", "%q is not %s or %s", t.Order, TraceOrderFile, TraceOrderRandom)
	}
	if t.Namespaces != "" && t.Namespaces != TraceNamespacesDefault && t.Namespaces != TraceNamespacesQoS {
		bad(f+".namespaces", "%q is not %s or %s", t.Namespaces, TraceNamespacesDefault, TraceNamespacesQoS)
	}
	for _, q := range sortedKeys(t.QoSPriority) {
		if err := labelValue("qos", q); err != nil || q == "" {
			bad(f+".qosPriority", "%q is not a qos value of the trace", q)
		}
		if v := t.QoSPriority[q]; v > maxUserPriority {
			bad(f+".qosPriority."+q, "at most %d (the highest user-definable priority), got %d", maxUserPriority, v)
		}
	}
}

// Where a trace's pods are, for TraceSpec.Namespaces.
const (
	TraceNamespacesDefault = "default"
	TraceNamespacesQoS     = "qos"
)

// maxUserPriority is Kubernetes' highest user-definable priority.
const maxUserPriority = 1_000_000_000

// applyQoS gives a pod of the trace its priority and namespace from its
// qos, as spec says (TraceSpec.QoSPriority, TraceSpec.Namespaces).
func (t *TraceSpec) applyQoS(p *v1.Pod) error {
	qos := p.Labels[LabelQoS]
	if prio, ok := t.QoSPriority[qos]; ok && qos != "" {
		p.Spec.Priority = &prio
	}
	if t.Namespaces == TraceNamespacesQoS && qos != "" {
		ns := strings.ToLower(qos)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("column qos: %q makes no valid namespace (trace.namespaces: qos)", qos)
		}
		p.Namespace = ns
	}
	return nil
}

func (t *TraceSpec) files() (nodes, pods string) {
	nodes, pods = cmpOr(t.Nodes, "openb_node_list_all_node.csv"), cmpOr(t.Pods, "openb_pod_list_default.csv")
	return filepath.Join(t.Dir, nodes), filepath.Join(t.Dir, pods)
}

// tracePod is one row of the pod list.
type tracePod struct {
	pod                *v1.Pod
	created, deleted   int64
	scheduled          int64 // -1: never scheduled in production
	gpuMilli, cpuMilli int64
	gpus, share        int64 // num_gpu and gpu_milli
	memMiB             int64
	models             []string // gpu_spec
	line               int      // in the pod list
}

// alibabaTrace is a parsed trace.
type alibabaTrace struct {
	nodes []*v1.Node
	pods  []tracePod
	// untimed: the pod list has no time columns (podColumnsShort).
	untimed bool
}

// csvRows reads a CSV file whose header is one of headers, refusing a
// file over the size limit, an empty file, any other header, a row with
// another number of fields and more than maxRows rows; row gets each
// record, its line and the header found (one of headers).
func csvRows(path string, headers [][]string, maxRows int, row func(rec []string, line int, header []string) error) error {
	f, err := openLimited(path, maxTraceFileBytes)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if b, err := br.Peek(len(utf8BOM)); err == nil && string(b) == utf8BOM {
		br.Discard(len(utf8BOM)) // as a spreadsheet saves a CSV file
	}
	r := csv.NewReader(br)
	r.FieldsPerRecord = -1 // checked below, with a message that names the columns
	r.ReuseRecord = true
	rec, err := r.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: empty file (want the header %s)", path, wantHeaders(headers))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	i := slices.IndexFunc(headers, func(h []string) bool { return slices.Equal(rec, h) })
	if i < 0 {
		return fmt.Errorf("%s:1: header is %q, want %s", path, strings.Join(rec, ","), wantHeaders(headers))
	}
	header := headers[i]
	for n := 0; ; n++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err) // csv.ParseError names the line
		}
		line, _ := r.FieldPos(0)
		if n >= maxRows {
			return fmt.Errorf("%s:%d: more than the limit of %d rows", path, line, maxRows)
		}
		if len(rec) != len(header) {
			return fmt.Errorf("%s:%d: %d fields, want %d: %s", path, line, len(rec), len(header), strings.Join(header, ","))
		}
		if err := row(rec, line, header); err != nil {
			return fmt.Errorf("%s:%d: %w", path, line, err)
		}
	}
}

// utf8BOM is the byte-order mark some programs write at the start of a
// UTF-8 file; a CSV file's header is read after it.
const utf8BOM = "\ufeff"

// wantHeaders names the accepted headers: "a,b" or "a,b" or "a".
func wantHeaders(headers [][]string) string {
	var out []string
	for _, h := range headers {
		out = append(out, strconv.Quote(strings.Join(h, ",")))
	}
	return strings.Join(out, " or ")
}

// field parses the integer in column i, between lo and hi.
func field(rec []string, cols []string, i int, lo, hi int64) (int64, error) {
	v, err := strconv.ParseInt(rec[i], 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("column %s: %q is not an integer from %d to %d", cols[i], rec[i], lo, hi)
	}
	return v, nil
}

func labelValue(col, v string) error {
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return fmt.Errorf("column %s: %q is not a valid label value: %s", col, v, strings.Join(errs, "; "))
	}
	return nil
}

const maxInt = 1 << 53 // more than any figure of a real trace

// The largest memory_mib, whose bytes fit in an int64, and the largest
// time, in seconds, that fits in a time.Duration (about 292 years): a
// larger figure would wrap around when converted.
const (
	maxMemoryMiB   = math.MaxInt64 >> 20
	maxTraceSecond = int64(math.MaxInt64 / time.Second)
)

// readAlibabaTrace reads and checks the node and pod lists.
func readAlibabaTrace(spec *TraceSpec) (*alibabaTrace, error) {
	nodesFile, podsFile := spec.files()
	t := &alibabaTrace{}
	names := map[string]bool{}
	err := csvRows(nodesFile, [][]string{nodeColumns}, maxTraceNodes, func(rec []string, _ int, _ []string) error {
		n, err := alibabaNode(rec)
		if err != nil {
			return err
		}
		if names[n.Name] {
			return fmt.Errorf("duplicate node %q", n.Name)
		}
		names[n.Name] = true
		t.nodes = append(t.nodes, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	clear(names)
	err = csvRows(podsFile, [][]string{podColumns, podColumnsShort}, maxTracePods, func(rec []string, line int, header []string) error {
		t.untimed = len(header) == len(podColumnsShort)
		p, err := alibabaPod(rec, t.untimed)
		if err != nil {
			return err
		}
		if err := spec.applyQoS(p.pod); err != nil {
			return err
		}
		p.line = line
		if names[p.pod.Name] {
			return fmt.Errorf("duplicate pod %q", p.pod.Name)
		}
		names[p.pod.Name] = true
		t.pods = append(t.pods, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(t.nodes) == 0 {
		return nil, fmt.Errorf("%s: no nodes", nodesFile)
	}
	if len(t.pods) == 0 {
		return nil, fmt.Errorf("%s: no pods", podsFile)
	}
	return t, nil
}

func alibabaNode(rec []string) (*v1.Node, error) {
	if errs := validation.IsDNS1123Subdomain(rec[0]); len(errs) > 0 {
		return nil, fmt.Errorf("column sn: %q is not a valid node name", rec[0])
	}
	var v [3]int64
	for i, hi := range []int64{maxInt, maxMemoryMiB, maxGPUsPerObject} {
		x, err := field(rec, nodeColumns, i+1, 0, hi)
		if err != nil {
			return nil, err
		}
		v[i] = x
	}
	if err := labelValue("model", rec[4]); err != nil {
		return nil, err
	}
	capacity := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(v[0], resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(v[1]<<20, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	if v[2] > 0 {
		capacity[ResourceGPUMilli] = *resource.NewQuantity(v[2]*1000, resource.DecimalSI)
	}
	labels := map[string]string{"kubernetes.io/hostname": rec[0]}
	if rec[4] != "" {
		labels[LabelGPUModel] = rec[4]
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: rec[0], Labels: labels},
		Status: v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity.DeepCopy(),
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}},
		},
	}, nil
}

// alibabaPod parses a row of the pod list; untimed: the row has only
// podColumnsShort, and the pod has no times, model constraint or QoS.
func alibabaPod(rec []string, untimed bool) (tracePod, error) {
	c := podColumns
	if errs := validation.IsDNS1123Subdomain(rec[0]); len(errs) > 0 {
		return tracePod{}, fmt.Errorf("column name: %q is not a valid pod name", rec[0])
	}
	var v [4]int64
	for i, hi := range []int64{maxInt, maxMemoryMiB, maxGPUsPerObject, 1000} {
		x, err := field(rec, c, i+1, 0, hi)
		if err != nil {
			return tracePod{}, err
		}
		v[i] = x
	}
	cpu, mem, gpus, share := v[0], v[1], v[2], v[3]
	if (gpus == 0) != (share == 0) {
		return tracePod{}, fmt.Errorf("columns num_gpu and gpu_milli: %d and %d (both zero, or both set)", gpus, share)
	}
	if gpus > 1 && share != 1000 {
		return tracePod{}, fmt.Errorf("column gpu_milli: %d with num_gpu %d (a pod with several GPUs takes them whole: 1000)", share, gpus)
	}
	if untimed {
		rec = append(rec[:5:5], "", "", "", "0", "0", "")
	}
	for _, col := range []int{6, 7} { // qos, pod_phase
		if err := labelValue(c[col], rec[col]); err != nil {
			return tracePod{}, err
		}
	}
	created, err := field(rec, c, 8, 0, maxTraceSecond)
	if err != nil {
		return tracePod{}, err
	}
	deleted, err := field(rec, c, 9, created, maxTraceSecond)
	if err != nil {
		return tracePod{}, err
	}
	scheduled := int64(-1)
	if rec[10] != "" {
		if scheduled, err = field(rec, c, 10, created, deleted); err != nil {
			return tracePod{}, err
		}
	}
	requests := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewMilliQuantity(cpu, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem<<20, resource.BinarySI),
	}
	if gpus > 0 {
		requests[ResourceGPUMilli] = *resource.NewQuantity(gpus*share, resource.DecimalSI)
	}
	gpuReq := "0"
	if gpus > 0 {
		gpuReq = fmt.Sprintf("%dx%d", gpus, share)
	}
	labels := map[string]string{"group": traceGroup, LabelGPURequest: gpuReq,
		LabelRequests: fmt.Sprintf("%dm-%dMi-%s", cpu, mem, gpuReq)}
	if rec[6] != "" {
		labels[LabelQoS] = rec[6]
	}
	prio := int32(0)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: rec[0], Labels: labels},
		Spec: v1.PodSpec{
			SchedulerName: schedulerName,
			Priority:      &prio,
			Containers:    []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Requests: requests}}},
		},
	}
	if rec[5] != "" {
		models := strings.Split(rec[5], "|")
		for _, m := range models {
			if err := labelValue("gpu_spec", m); err != nil || m == "" {
				return tracePod{}, fmt.Errorf("column gpu_spec: %q is not a |-separated list of GPU models", rec[5])
			}
		}
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: LabelGPUModel, Operator: v1.NodeSelectorOpIn, Values: models}},
			}}},
		}}
	}
	tp := tracePod{pod: p, created: created, deleted: deleted, scheduled: scheduled, gpuMilli: gpus * share, cpuMilli: cpu, gpus: gpus, share: share, memMiB: mem}
	if rec[5] != "" {
		tp.models = strings.Split(rec[5], "|")
	}
	return tp, nil
}

// loadTrace adds the trace's nodes now and plans its pods: each arrives
// at its creation time, runs for deletion − creation once bound, and is
// deleted at its deletion time if it is still pending then.
func (s *sim) loadTrace(spec *TraceSpec) error {
	t, err := readAlibabaTrace(spec)
	if err != nil {
		return fmt.Errorf("trace %s: %w", spec.Format, err)
	}
	if spec.from > 0 {
		if t.untimed {
			return fmt.Errorf("trace %s: a split at %ds needs a pod list with time columns", spec.Format, spec.from)
		}
		t.pods = window(t.pods, spec.from)
	}
	if spec.Order == TraceOrderRandom && !t.untimed {
		_, podsFile := spec.files()
		return fmt.Errorf("trace %s: trace.order (--trace-order) random: %s has time columns: its pods arrive at their creation_time, in no order to shuffle (the order is for a list of %s)", spec.Format, podsFile, strings.Join(podColumnsShort, ","))
	}
	if spec.Speed != 0 && spec.Speed != 1 && t.untimed {
		_, podsFile := spec.files()
		return fmt.Errorf("trace %s: trace.speed (--trace-speed) %v: %s has no time columns: its pods all arrive at the start, with no arrivals to bring closer", spec.Format, spec.Speed, podsFile)
	}
	if s.sc.Scheduler.gpuModel() == GPUModelDRA {
		if err := s.traceGPUsAsDevices(t); err != nil {
			return err
		}
	}
	if s.x.gpu != nil || s.x.gpuDRA != nil {
		reqs := make([]gpu.Request, len(t.pods))
		for i, tp := range t.pods {
			reqs[i] = gpu.Request{CPU: tp.cpuMilli, Mem: tp.memMiB, Count: int(tp.gpus), Share: tp.share, Models: tp.models}
		}
		w := gpu.Typical(reqs, gpu.TypicalShare)
		if s.x.gpu != nil {
			s.x.gpu.workload = w
			s.x.alloc.frag = newFragMeter(s.x.gpu.assignedTo, w)
		} else {
			s.x.gpuDRA.workload = w
			s.x.alloc.frag = newFragMeter(s.draAssigned, w)
		}
	}
	for _, n := range t.nodes {
		if _, dup := s.cl.nodes[n.Name]; dup {
			return fmt.Errorf("trace %s: node %s is also in the scenario", spec.Format, n.Name)
		}
		if g := s.sc.nodeGroupOf(n.Name); g != "" {
			return fmt.Errorf("trace %s: node %s is also the scenario's (node group %s)", spec.Format, n.Name, g)
		}
		n.UID = s.cl.nextUID()
		s.cl.nodes[n.Name] = n
		s.cl.nodeGroups[traceGroup] = append(s.cl.nodeGroups[traceGroup], n.Name)
		s.x.alloc.nodeAdded(s.now, n)
		s.h.AddNode(n)
	}
	if err := s.checkTracePods(spec, t); err != nil {
		return err
	}
	if t.untimed {
		s.loadBatch(spec, t)
		return nil
	}
	s.x.traceLife = make(map[types.NamespacedName]time.Duration, len(t.pods))
	speed := spec.Speed
	if speed == 0 {
		speed = 1
	}
	arrival := func(sec int64) time.Duration { return time.Duration(float64(sec) * float64(time.Second) / speed) }
	var span time.Duration
	_, podsFile := spec.files()
	for _, tp := range t.pods {
		if float64(tp.created)*float64(time.Second)/speed+float64(tp.deleted-tp.created)*float64(time.Second) >= math.MaxInt64 {
			return fmt.Errorf("trace %s: %s:%d: at speed %v the pod ends after the longest virtual time (%v)", spec.Format, podsFile, tp.line, speed, time.Duration(math.MaxInt64))
		}
		p := tp.pod
		p.UID, p.Spec.SchedulerName = s.cl.nextUID(), s.cl.schedulerOf(nil)
		key := framework.Key(p)
		life := time.Duration(tp.deleted-tp.created) * time.Second
		s.x.traceLife[key] = life
		span = max(span, arrival(tp.created)+life)
		s.planned++
		s.at(epoch.Add(arrival(tp.created)), func() {
			s.planned--
			if s.x.traceCut {
				return
			}
			s.track(traceGroup, p)
			s.arrive(p)
		})
		s.at(epoch.Add(arrival(tp.created)+life), func() {
			cur := s.cl.pods[key]
			if s.x.traceCut || s.x.traceKeep || cur == nil || cur.UID != p.UID || cur.Spec.NodeName != "" {
				return // bound: its lifetime ends it
			}
			s.ended(cur, endWithdrawn)
			delete(s.cl.pods, key)
			s.h.DeletePod(cur)
		})
	}
	if s.sc.Duration == 0 {
		s.end = epoch.Add(span)
	}
	s.x.production = production(spec, t)
	return nil
}

// window returns the pods created at second from or later, with their
// times counted from it: the trace as a scheduler started at from would
// have seen it arrive. O(pods).
func window(pods []tracePod, from int64) []tracePod {
	var out []tracePod
	for _, tp := range pods {
		if tp.created < from {
			continue
		}
		tp.created, tp.deleted = tp.created-from, tp.deleted-from
		if tp.scheduled >= 0 {
			tp.scheduled -= from
		}
		out = append(out, tp)
	}
	return out
}

// checkTracePods refuses a trace pod that has the name of a pod of the
// scenario or of the snapshot: one would replace the other in the
// cluster. O(pods × pod groups).
func (s *sim) checkTracePods(spec *TraceSpec, t *alibabaTrace) error {
	_, podsFile := spec.files()
	for _, tp := range t.pods {
		key := framework.Key(tp.pod)
		if g := s.sc.podGroupOf(key); g != "" {
			return fmt.Errorf("trace %s: %s:%d: pod %s is also the scenario's (pod group %s)", spec.Format, podsFile, tp.line, key, g)
		}
		if s.x.snapshotPods[key] {
			return fmt.Errorf("trace %s: %s:%d: pod %s is also the snapshot's", spec.Format, podsFile, tp.line, key)
		}
	}
	return nil
}

// loadBatch plans a pod list without times: every pod arrives at the
// start, in file order or shuffled with the scenario's seed
// (TraceSpec.Order), and none is ever deleted. There is no production
// run to compare with.
func (s *sim) loadBatch(spec *TraceSpec, t *alibabaTrace) {
	pods := t.pods
	if spec.Order == TraceOrderRandom {
		pods = slices.Clone(pods)
		r := rand.New(rand.NewPCG(s.sc.Seed, s.sc.Seed^0x0bde))
		r.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	}
	for _, tp := range pods {
		p := tp.pod
		p.UID, p.Spec.SchedulerName = s.cl.nextUID(), s.cl.schedulerOf(nil)
		s.planned++
		s.at(epoch, func() {
			s.planned--
			s.track(traceGroup, p)
			s.arrive(p)
		})
	}
}
