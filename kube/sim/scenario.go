// Package sim is schedq's simulator: it drives the real scheduler (the
// plugins, the cycle, the queue and the event handlers of
// kube/scheduler) against an in-memory cluster in virtual time, from a
// scenario and a seed, and reports what happened. Nothing sleeps: the
// queue's deterministic core takes the virtual now, and the same scenario
// and seed give the same report.
package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"github.com/schedq/schedq/kube/gpu"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// Scenario is a workload: a cluster, pods arriving over time, timed
// cluster events, and the settings of the scheduler and the queue.
type Scenario struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Seed        uint64 `yaml:"seed"`
	// Duration bounds the virtual time. Default 15m. The run ends earlier
	// once nothing is left to do but parked pods that no event will wake.
	Duration  time.Duration `yaml:"duration"`
	Scheduler SchedulerSpec `yaml:"scheduler"`
	Queue     QueueSpec     `yaml:"queue"`
	Nodes     []NodeGroup   `yaml:"nodes"`
	Pods      []PodGroup    `yaml:"pods"`
	Events    []EventSpec   `yaml:"events"`
	// Trace replays a recorded workload (see inputs.go); Snapshot starts
	// from a cluster saved with kubectl.
	Trace    *TraceSpec `yaml:"trace"`
	Snapshot string     `yaml:"snapshot"`
	// Objects are created at the start: PersistentVolumes,
	// PersistentVolumeClaims, StorageClasses, CSINodes, as manifests
	// (read only by kube-scheduler's plugins).
	Objects []Object `yaml:"objects"`

	// forkedGPU is the GPU model of the trace replay a forecast's
	// scenario was forked from: the forecast drops the trace's workload
	// but keeps its scheduler (see gpuMode).
	forkedGPU gpuMode
	// learnsRuntimes: the run learns the runtimes of the pods that finish
	// (LoadLearning), so scheduler.config's history is taken, not refused.
	learnsRuntimes bool
}

// SchedulerSpec sets the scheduler's costs and choices.
type SchedulerSpec struct {
	// AttemptCost is the virtual time one scheduling attempt takes.
	// Default 5ms.
	AttemptCost time.Duration `yaml:"attemptCost"`
	// BindLatency is the virtual time from the start of a binding to the
	// API server's answer. Default 20ms.
	BindLatency time.Duration `yaml:"bindLatency"`
	// Scoring and DisablePlugins set schedq's former hand-written
	// plugins: refused, with the replacement named (validatePlugins).
	Scoring                  string   `yaml:"scoring"`
	PercentageOfNodesToScore int      `yaml:"percentageOfNodesToScore"`
	DisablePlugins           []string `yaml:"disablePlugins"`
	// Gangs makes the pod groups' gangs PodGroups (default true); false
	// schedules the same pods one by one, for comparison.
	Gangs *bool `yaml:"gangs"`
	// Preemption, if set, lets pods that fit nowhere evict pods of lower
	// priority (see PreemptionSpec).
	Preemption *PreemptionSpec `yaml:"preemption"`
	// GPUModel is how a trace's GPUs are modelled: dra (the default:
	// each GPU a DRA device in its node's ResourceSlice, each pod's GPUs
	// a ResourceClaim that DynamicResources allocates), device (each GPU
	// on its own in the simulator's GPUDevices filter, which gives a
	// policy's own choice of GPUs) or capacity (one extended resource of
	// thousandths per node, as NodeResourcesFit sees it).
	GPUModel string `yaml:"gpuModel"`
	// GPUPolicy, with dra or the device model, replaces the default
	// scoring with one of the GPU-sharing paper's policies (random,
	// dotprod, gpuclustering, gpupacking, bestfit, fgd); on the device
	// model it also chooses the GPUs, with DRA the allocator takes the
	// best fit; empty: the default scoring. It is the profile's only
	// score plugin (gpu_framework.go).
	GPUPolicy string `yaml:"gpuPolicy"`
	// Plugins is upstream, or empty, the same: lone pods, groups and
	// preemption go through kube-scheduler v1.37.2's framework with its
	// default profile, or Config's (a KubeSchedulerConfiguration file with
	// one profile). Any other value is refused (validatePlugins).
	Plugins string `yaml:"plugins"`
	Config  string `yaml:"config"`
	// Profile, if set, is the profile to run, loaded already (the live
	// scheduler's, loaded from --config at its start, for its forecasts):
	// the file Config names is then not read again, and the scenario's
	// settings are taken as they are. Never in a scenario file.
	Profile *config.KubeSchedulerProfile `yaml:"-"`
	// Profiles, if set, are several profiles to run, loaded already, as
	// Profile is one: the live scheduler's, for its forecasts. Never in a
	// scenario file.
	Profiles []*config.KubeSchedulerProfile `yaml:"-"`
}

// QueueSpec sets the queue. Unset fields take the queue's defaults.
type QueueSpec struct {
	InitialBackoff time.Duration `yaml:"initialBackoff"`
	// MaxBackoff set to 0 turns backoff off, as kube-scheduler's
	// podMaxBackoffSeconds: 0 does (the same as disableBackoff: true);
	// unset, it is the queue's default, 10s.
	MaxBackoff     *time.Duration `yaml:"maxBackoff"`
	DisableBackoff bool           `yaml:"disableBackoff"`
	PopFromBackoff *bool          `yaml:"popFromBackoff"`
	QueueingHints  *bool          `yaml:"queueingHints"`
	// WakeBudget wakes, on an event that makes room on a node, only the
	// pods that fit in that room (see scheduler.WakeBudget). Default on.
	WakeBudget                 *bool         `yaml:"wakeBudget"`
	MaxInUnschedulable         time.Duration `yaml:"maxInUnschedulable"`
	FlushBackoffInterval       time.Duration `yaml:"flushBackoffInterval"`
	FlushUnschedulableInterval time.Duration `yaml:"flushUnschedulableInterval"`
	// Fairness shares the queue fairly between namespaces, as the
	// scheduler's --fair-namespaces does, with FairnessWeights (missing:
	// 1) and FairnessHalfLife (0: 1m). Default off.
	Fairness         bool               `yaml:"fairness"`
	FairnessWeights  map[string]float64 `yaml:"fairnessWeights"`
	FairnessHalfLife time.Duration      `yaml:"fairnessHalfLife"`
}

// NodeGroup is count nodes named NAME-0, NAME-1, ...
type NodeGroup struct {
	Name     string            `yaml:"name"`
	Count    int               `yaml:"count"`
	Capacity map[string]string `yaml:"capacity"` // cpu, memory, pods, ephemeral-storage, extended resources
	Labels   map[string]string `yaml:"labels"`
	// Zones spreads the nodes over N zones (label topology.kubernetes.io/zone).
	Zones         int         `yaml:"zones"`
	Taints        []TaintSpec `yaml:"taints"`
	Unschedulable bool        `yaml:"unschedulable"`
}

// TaintSpec is a node taint.
type TaintSpec struct {
	Key    string `yaml:"key"`
	Value  string `yaml:"value"`
	Effect string `yaml:"effect"` // NoSchedule (default), PreferNoSchedule or NoExecute
}

// PodGroup is count pods named NAME-0, NAME-1, ...
type PodGroup struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"` // default "default"
	Count     int    `yaml:"count"`
	// SchedulerName is the profile that schedules the pods (their
	// spec.schedulerName): one of scheduler.config's profiles, the
	// first by default.
	SchedulerName   string            `yaml:"schedulerName"`
	Requests        map[string]string `yaml:"requests"`
	Priority        int32             `yaml:"priority"`
	Labels          map[string]string `yaml:"labels"`
	NodeSelector    map[string]string `yaml:"nodeSelector"`
	Affinity        []TermSpec        `yaml:"affinity"`
	AntiAffinity    []TermSpec        `yaml:"antiAffinity"`
	Tolerations     []TolerationSpec  `yaml:"tolerations"`
	SchedulingGates []string          `yaml:"schedulingGates"`
	Arrival         ArrivalSpec       `yaml:"arrival"`
	// Lifetime is how long a pod runs once bound; unset, it runs forever.
	Lifetime *LifetimeSpec `yaml:"lifetime"`
	// Gang makes the pods gangs (see GangSpec).
	Gang *GangSpec `yaml:"gang"`
	// Read only by kube-scheduler's plugins (scheduler.plugins:
	// upstream): topology spread constraints and node affinity as in a
	// pod's spec, host ports, the PersistentVolumeClaims each pod
	// mounts ("{i}" in a name is the pod's index in its group), and its
	// DRA claims as in a pod's spec.resourceClaims (a
	// resourceClaimTemplateName, or a resourceClaimName with "{i}").
	TopologySpreadConstraints Kube[[]v1.TopologySpreadConstraint] `yaml:"topologySpreadConstraints"`
	NodeAffinity              Kube[v1.NodeAffinity]               `yaml:"nodeAffinity"`
	HostPorts                 []int32                             `yaml:"hostPorts"`
	Claims                    []string                            `yaml:"claims"`
	ResourceClaims            Kube[[]v1.PodResourceClaim]         `yaml:"resourceClaims"`
}

// TermSpec is a required pod (anti-)affinity term.
type TermSpec struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
	TopologyKey string            `yaml:"topologyKey"`
}

// TolerationSpec is a pod toleration.
type TolerationSpec struct {
	Key      string `yaml:"key"`
	Operator string `yaml:"operator"` // Equal (default) or Exists
	Value    string `yaml:"value"`
	Effect   string `yaml:"effect"`
}

// ArrivalSpec says when a group's pods arrive: all at At, or from At on
// at Rate pods per virtual second.
type ArrivalSpec struct {
	At   time.Duration `yaml:"at"`
	Rate float64       `yaml:"rate"`
}

// EventSpec is one timed cluster event; exactly one action is set.
type EventSpec struct {
	At           time.Duration `yaml:"at"`
	AddNodes     *NodeGroup    `yaml:"addNodes"`
	RemoveNodes  *Selection    `yaml:"removeNodes"`
	TaintNodes   *TaintChange  `yaml:"taintNodes"`
	UntaintNodes *TaintChange  `yaml:"untaintNodes"`
	DeletePods   *Selection    `yaml:"deletePods"`
	RemoveGates  *Selection    `yaml:"removeGates"`
	// CreateObjects creates objects (as Scenario.Objects; one that exists
	// is updated), DeleteObjects deletes them (kind and name suffice).
	CreateObjects []Object `yaml:"createObjects"`
	DeleteObjects []Object `yaml:"deleteObjects"`
}

// Selection picks the first Count members of a node or pod group, or all
// of them if count is left out. An explicit count: 0 is an error: it
// would select nothing.
type Selection struct {
	Group    string `yaml:"group"`
	Count    int    `yaml:"count"`
	countSet bool   // count was given
}

// UnmarshalYAML decodes a selection and notes whether count was given.
func (x *Selection) UnmarshalYAML(n *yaml.Node) error {
	type plain Selection
	if err := n.Decode((*plain)(x)); err != nil {
		return err
	}
	x.countSet = hasKey(n, "count")
	return nil
}

// TaintChange adds or removes a taint on some nodes of a group.
type TaintChange struct {
	Selection `yaml:",inline"`
	Taint     TaintSpec `yaml:"taint"`
}

// UnmarshalYAML decodes a taint change and notes whether count was given
// (an inline Selection's own UnmarshalYAML is not called).
func (x *TaintChange) UnmarshalYAML(n *yaml.Node) error {
	// Not a copy of TaintChange: it would inherit Selection's UnmarshalYAML.
	var v struct {
		Group string    `yaml:"group"`
		Count int       `yaml:"count"`
		Taint TaintSpec `yaml:"taint"`
	}
	if err := n.Decode(&v); err != nil {
		return err
	}
	*x = TaintChange{Selection: Selection{Group: v.Group, Count: v.Count, countSet: hasKey(n, "count")}, Taint: v.Taint}
	return nil
}

// hasKey reports whether mapping n has key.
func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

//go:embed scenarios/*.yaml
var builtin embed.FS

// DefaultScenario is what "schedq simulate" runs with no arguments.
const DefaultScenario = "NodeArrival"

// Builtins lists the built-in scenarios, by name.
func Builtins() []string {
	entries, _ := fs.ReadDir(builtin, "scenarios")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return names
}

// ErrUnknownScenario: the name is neither a built-in scenario nor a file.
var ErrUnknownScenario = errors.New("unknown scenario")

// Limits on what a scenario may ask for, checked before anything is
// built, so that a typo such as count: 2000000000 is a clear error rather
// than an out-of-memory crash (docs/simulator-performance.md measures
// about 6 KiB per pod and 2 KiB per node).
const (
	// MaxScenarioBytes is the largest scenario file Load reads.
	MaxScenarioBytes = 4 << 20
	// MaxNodes bounds the nodes of a scenario: every node group's count
	// plus every addNodes event's.
	MaxNodes = 1_000_000
	// MaxPods bounds the pods of a scenario: every pod group's count.
	MaxPods = 1_000_000
)

// ErrEmptyScenario: the scenario file has no content.
var ErrEmptyScenario = errors.New("the file is empty; a scenario needs at least a name and a pods list (see docs/simulator.md)")

// Load reads a built-in scenario by name, or a scenario file by path.
// A file's relative paths (snapshot, trace.dir, scheduler.config) are
// relative to the directory the file is in, as a kubeconfig's are.
// Errors name the scenario or the file.
func Load(nameOrFile string) (*Scenario, error) { return loadScenario(nameOrFile, false) }

// LoadLearning is Load for a run that learns the runtimes of the pods
// that finish (schedq whatif's replay): the history in the Schedq args of
// scheduler.config is accepted (see ConfigHistory), where Load refuses it.
func LoadLearning(nameOrFile string) (*Scenario, error) { return loadScenario(nameOrFile, true) }

// loadScenario is Load, or LoadLearning if learns.
func loadScenario(nameOrFile string, learns bool) (*Scenario, error) {
	data, err := builtin.ReadFile("scenarios/" + nameOrFile + ".yaml")
	source, base := "built-in scenario "+nameOrFile, ""
	if err != nil {
		data, err = readScenarioFile(nameOrFile)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("%w %q: not a built-in scenario (%s) nor a file", ErrUnknownScenario, nameOrFile, strings.Join(Builtins(), ", "))
			}
			return nil, fmt.Errorf("scenario %s: %w", nameOrFile, err)
		}
		source = "scenario " + nameOrFile
		base = filepath.Dir(nameOrFile)
	}
	s, err := parseAt(data, base, learns)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return s, nil
}

// readScenarioFile reads a file of at most MaxScenarioBytes.
func readScenarioFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxScenarioBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxScenarioBytes {
		return nil, tooLarge()
	}
	return data, nil
}

func tooLarge() error {
	return fmt.Errorf("larger than the %d MiB a scenario file may have", MaxScenarioBytes>>20)
}

// Parse decodes and validates a scenario. Unknown fields and values of the
// wrong kind are errors that give their exact path. Relative paths are
// relative to the current directory.
func Parse(data []byte) (*Scenario, error) { return parseAt(data, "", false) }

// parseAt is Parse with relative paths taken relative to base ("": the
// current directory).
func parseAt(data []byte, base string, learns bool) (*Scenario, error) {
	if len(data) > MaxScenarioBytes {
		return nil, tooLarge()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrEmptyScenario // comments only
		}
		return nil, yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, ErrEmptyScenario
	}
	var errs []error
	checkFields(doc.Content[0], reflect.TypeOf(Scenario{}), "", func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", cmpOr(field, "the scenario"), fmt.Sprintf(format, args...)))
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	s := Scenario{learnsRuntimes: learns}
	if err := dec.Decode(&s); err != nil {
		return nil, yamlError(err)
	}
	if err := oneDocument(dec); err != nil {
		return nil, err
	}
	s.resolvePaths(base)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// resolvePaths makes s's relative paths (snapshot, trace.dir,
// scheduler.config) relative to base instead of the current directory.
func (s *Scenario) resolvePaths(base string) {
	if base == "" || base == "." {
		return
	}
	at := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	at(&s.Snapshot)
	at(&s.Scheduler.Config)
	if s.Trace != nil {
		at(&s.Trace.Dir)
	}
}

// oneDocument refuses a second YAML document after the scenario (after
// a "---"): it would be ignored. An empty one is no document.
func oneDocument(dec *yaml.Decoder) error {
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return yamlError(err)
	case len(extra.Content) == 0 || extra.Content[0].Tag == "!!null":
		return oneDocument(dec)
	default:
		return fmt.Errorf("line %d: a second YAML document (after ---); a scenario file holds one scenario", extra.Content[0].Line)
	}
}

func yamlError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.ReplaceAll(strings.TrimPrefix(msg, "unmarshal errors:\n  "), "\n  ", "; ")
	return errors.New(msg)
}

// Validate reports the first problem, naming the field.
func (s *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	nonNegative(bad, "duration", s.Duration)
	s.validateScheduler(bad)
	s.validateQueue(bad)
	nodeGroups, podGroups := s.validateGroups(bad)
	s.validateEvents(bad, nodeGroups, podGroups)
	s.validateObjects(bad)
	s.validateInputs(bad)
	s.validateGroupNames(bad)
	s.validateFairness(bad)
	if len(s.Pods) == 0 && s.Trace == nil && s.Snapshot == "" {
		bad("pods", "a scenario needs at least one pod group (or a trace or a snapshot)")
	}
	s.validateBackoff(bad)
	s.validateSize(bad)
	s.validateEnd(bad)
	return errors.Join(errs...)
}

// nonNegative reports a negative duration d of field to bad.
func nonNegative(bad func(string, string, ...any), field string, d time.Duration) {
	if d < 0 {
		bad(field, "must not be negative, got %v", d)
	}
}

// GPUNeedsTrace refuses scheduler.gpuModel and scheduler.gpuPolicy in a
// scenario without a trace: they model a trace's GPUs, and would change
// nothing. Validate does not, since a trace may be given to a scenario
// after it is loaded (as schedq simulate --trace gives it); a caller asks
// once the trace is in place.
func (s *Scenario) GPUNeedsTrace() error {
	switch {
	case s.Trace != nil:
	case s.Scheduler.GPUModel != "":
		return fmt.Errorf("scheduler.gpuModel %s: only with a trace, whose GPUs it models; there is none", s.Scheduler.GPUModel)
	case s.Scheduler.GPUPolicy != "":
		return fmt.Errorf("scheduler.gpuPolicy %s: only with a trace, whose GPUs it chooses; there is none", s.Scheduler.GPUPolicy)
	}
	return nil
}

// validateScheduler checks the scheduler's settings: costs, preemption,
// the share of nodes scored, the GPU model and policy, the plugins and
// the configuration file.
func (s *Scenario) validateScheduler(bad func(string, string, ...any)) {
	nonNegative(bad, "scheduler.attemptCost", s.Scheduler.AttemptCost)
	nonNegative(bad, "scheduler.bindLatency", s.Scheduler.BindLatency)
	if p := s.Scheduler.Preemption; p != nil {
		nonNegative(bad, "scheduler.preemption.gracePeriod", p.GracePeriod)
		if p.PodGracePeriods && p.GracePeriod != 0 {
			bad("scheduler.preemption.podGracePeriods", "true beside gracePeriod %v: each victim's own grace period replaces the scenario's; set one", p.GracePeriod)
		}
	}
	if p := s.Scheduler.PercentageOfNodesToScore; p < 0 || p > 100 {
		bad("scheduler.percentageOfNodesToScore", "must be 0 to 100, got %d", p)
	}
	switch s.Scheduler.GPUModel {
	case "", GPUModelDevice, GPUModelDRA:
	case GPUModelCapacity:
		if s.Scheduler.GPUPolicy != "" {
			bad("scheduler.gpuPolicy", "needs gpuModel device or dra, got gpuModel %s", s.Scheduler.GPUModel)
		}
	default:
		bad("scheduler.gpuModel", "%q is not %s, %s or %s", s.Scheduler.GPUModel, GPUModelDevice, GPUModelCapacity, GPUModelDRA)
	}
	if p := s.Scheduler.GPUPolicy; p != "" {
		if _, err := gpu.ParsePolicy(p); err != nil {
			bad("scheduler.gpuPolicy", "%v", err)
		}
	}
	s.Scheduler.validatePlugins(bad)
	s.checkGPUConfig(bad)
	s.checkConfigFile(bad)
	s.validateSchedulerNames(bad)
}

// validateQueue checks that the queue's durations are not negative.
func (s *Scenario) validateQueue(bad func(string, string, ...any)) {
	q := s.Queue
	for _, f := range []struct {
		n string
		d time.Duration
	}{{"queue.initialBackoff", q.InitialBackoff}, {"queue.maxBackoff", deref(q.MaxBackoff)}, {"queue.maxInUnschedulable", q.MaxInUnschedulable},
		{"queue.flushBackoffInterval", q.FlushBackoffInterval}, {"queue.flushUnschedulableInterval", q.FlushUnschedulableInterval}} {
		nonNegative(bad, f.n, f.d)
	}
}

// validateGroups checks the node and pod groups and returns the names of
// each kind (the node groups at the start).
func (s *Scenario) validateGroups(bad func(string, string, ...any)) (nodeGroups, podGroups map[string]bool) {
	nodeGroups = map[string]bool{}
	for i := range s.Nodes {
		s.Nodes[i].validate(fmt.Sprintf("nodes[%d]", i), bad)
		if nodeGroups[s.Nodes[i].Name] {
			bad(fmt.Sprintf("nodes[%d].name", i), "duplicate group %q", s.Nodes[i].Name)
		}
		nodeGroups[s.Nodes[i].Name] = true
	}
	podGroups = map[string]bool{}
	for i := range s.Pods {
		s.Pods[i].validate(fmt.Sprintf("pods[%d]", i), bad)
		if podGroups[s.Pods[i].Name] {
			bad(fmt.Sprintf("pods[%d].name", i), "duplicate group %q", s.Pods[i].Name)
		}
		podGroups[s.Pods[i].Name] = true
	}
	return nodeGroups, podGroups
}

// validateEvents checks each event: one kind each, and the groups it
// names known at its place in the list (a node group added by an earlier
// event counts; nodeGroups gains the groups events add).
func (s *Scenario) validateEvents(bad func(string, string, ...any), nodeGroups, podGroups map[string]bool) {
	nodeGroupAt := s.nodeGroupAt(maps.Clone(nodeGroups))
	podGroup := func(g string) string {
		if podGroups[g] {
			return ""
		}
		return fmt.Sprintf("unknown pod group %q", g)
	}
	for i, e := range s.Events {
		f := fmt.Sprintf("events[%d]", i)
		nonNegative(bad, f+".at", e.At)
		n := 0
		for _, set := range []bool{e.AddNodes != nil, e.RemoveNodes != nil, e.TaintNodes != nil, e.UntaintNodes != nil, e.DeletePods != nil, e.RemoveGates != nil,
			e.CreateObjects != nil, e.DeleteObjects != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			bad(f, "needs exactly one of addNodes, removeNodes, taintNodes, untaintNodes, deletePods, removeGates, createObjects, deleteObjects (has %d)", n)
			continue
		}
		sel := func(field string, x *Selection, known func(string) string) {
			switch {
			case x.Count < 0:
				bad(f+"."+field+".count", "must not be negative, got %d", x.Count)
			case x.Count == 0 && x.countSet:
				bad(f+"."+field+".count", "0 selects nothing; leave count out to select the whole group")
			}
			if problem := known(x.Group); problem != "" {
				bad(f+"."+field+".group", "%s", problem)
			}
		}
		switch {
		case e.AddNodes != nil:
			e.AddNodes.validate(f+".addNodes", bad)
			if nodeGroups[e.AddNodes.Name] {
				bad(f+".addNodes.name", "duplicate group %q", e.AddNodes.Name)
			}
			nodeGroups[e.AddNodes.Name] = true
		case e.RemoveNodes != nil:
			sel("removeNodes", e.RemoveNodes, nodeGroupAt(i))
		case e.TaintNodes != nil:
			sel("taintNodes", &e.TaintNodes.Selection, nodeGroupAt(i))
			e.TaintNodes.Taint.validate(f+".taintNodes.taint", bad)
		case e.UntaintNodes != nil:
			sel("untaintNodes", &e.UntaintNodes.Selection, nodeGroupAt(i))
			if e.UntaintNodes.Taint.Key == "" {
				bad(f+".untaintNodes.taint.key", "must not be empty")
			}
		case e.DeletePods != nil:
			sel("deletePods", e.DeletePods, podGroup)
		case e.RemoveGates != nil:
			sel("removeGates", e.RemoveGates, podGroup)
		case e.CreateObjects != nil:
			for j, o := range e.CreateObjects {
				o.validate(fmt.Sprintf("%s.createObjects[%d]", f, j), bad)
			}
		}
	}
}

// validateObjects checks each object and that none is listed twice.
func (s *Scenario) validateObjects(bad func(string, string, ...any)) {
	objects := map[string]int{}
	for i, o := range s.Objects {
		f := fmt.Sprintf("objects[%d]", i)
		o.validate(f, bad)
		if o.obj == nil {
			continue
		}
		if j, dup := objects[o.key()]; dup {
			bad(f, "%s is also objects[%d]", o.describe(), j)
		}
		objects[o.key()] = i
	}
}

// defaultDuration is the longest virtual time of a run whose scenario
// sets no duration.
const defaultDuration = 15 * time.Minute

// KnownEnd returns the longest virtual time of a run of s and, for a
// message, what sets it: its duration, else the default one. ok is false
// for a trace without a duration, whose run ends with the trace, known
// only once the trace is read.
func (s *Scenario) KnownEnd() (end time.Duration, why string, ok bool) {
	switch {
	case s.Duration != 0:
		return s.Duration, "the scenario's duration", true
	case s.Trace != nil:
		return 0, "", false
	}
	return defaultDuration, "the default duration of a scenario that sets none", true
}

// validateEnd refuses a pod group whose pods would all arrive, and an
// event that would happen, after the run's end: it would never happen,
// and the report would not say so. A trace's run without a duration ends
// with the trace, which is not read yet: not checked then.
func (s *Scenario) validateEnd(bad func(string, string, ...any)) {
	if s.Duration == 0 && s.Trace != nil || s.Duration < 0 {
		return // no end yet, or a negative duration, refused as such
	}
	end, by := s.Duration, ""
	if end == 0 {
		end, by = defaultDuration, ", the default"
	}
	for i, g := range s.Pods {
		if g.Count > 0 && g.Arrival.At > end {
			bad(fmt.Sprintf("pods[%d].arrival.at", i), "%v is after the run's end (duration %v%s): the group's pods would never arrive", g.Arrival.At, end, by)
		}
	}
	for i, e := range s.Events {
		if e.At > end {
			bad(fmt.Sprintf("events[%d].at", i), "%v is after the run's end (duration %v%s): the event would never happen", e.At, end, by)
		}
	}
}

// nodeGroupAt returns a check that event i's node group exists when the
// event happens: a node group (atStart), or an addNodes event's that
// comes before it in time (events of one instant happen in list order).
// The check returns the problem, "" if none.
func (s *Scenario) nodeGroupAt(atStart map[string]bool) func(i int) func(string) string {
	added := map[string]int{} // addNodes groups: the event that adds each
	for j, e := range s.Events {
		if e.AddNodes != nil {
			if _, dup := added[e.AddNodes.Name]; !dup {
				added[e.AddNodes.Name] = j
			}
		}
	}
	return func(i int) func(string) string {
		return func(g string) string {
			j, ok := added[g]
			switch {
			case atStart[g]:
				return ""
			case !ok:
				return fmt.Sprintf("unknown node group %q", g)
			case s.Events[j].At > s.Events[i].At || s.Events[j].At == s.Events[i].At && j > i:
				return fmt.Sprintf("node group %q is added at %v (events[%d]), after this event at %v", g, s.Events[j].At, j, s.Events[i].At)
			}
			return ""
		}
	}
}

// validateBackoff checks the backoff bounds the queue will get, defaults
// included, so that the queue never refuses them after the scenario loaded.
func (s *Scenario) validateBackoff(bad func(string, string, ...any)) {
	q := s.Queue
	if q.backoffOff() || q.InitialBackoff < 0 || deref(q.MaxBackoff) < 0 {
		return
	}
	initial, maxB, by := q.InitialBackoff, deref(q.MaxBackoff), ""
	if initial == 0 {
		initial = defaultInitialBackoff
	}
	if q.MaxBackoff == nil {
		maxB, by = defaultMaxBackoff, ", its default"
	}
	if initial > maxB {
		bad("queue.initialBackoff", "%v is more than queue.maxBackoff (%v%s)", initial, maxB, by)
	}
}

// validateSize refuses counts beyond MaxNodes and MaxPods, one by one and
// in all, before anything is built. A count over the limit is reported
// alone: a total would count it too, and be a figure no one wrote.
func (s *Scenario) validateSize(bad func(string, string, ...any)) {
	var nodes, pods int64
	var nodesOver, podsOver bool
	count := func(field string, n int, total *int64, over *bool, limit int, kind string) {
		if n > limit {
			bad(field, "%d is more than the %d %s a scenario may have", n, limit, kind)
			*over = true
		}
		if n > 0 {
			*total += int64(n)
		}
	}
	for i, g := range s.Nodes {
		count(fmt.Sprintf("nodes[%d].count", i), g.Count, &nodes, &nodesOver, MaxNodes, "nodes")
	}
	for i, e := range s.Events {
		if e.AddNodes != nil {
			count(fmt.Sprintf("events[%d].addNodes.count", i), e.AddNodes.Count, &nodes, &nodesOver, MaxNodes, "nodes")
		}
	}
	for i, g := range s.Pods {
		count(fmt.Sprintf("pods[%d].count", i), g.Count, &pods, &podsOver, MaxPods, "pods")
	}
	if nodes > MaxNodes && !nodesOver {
		bad("nodes", "%d nodes in all (node groups and addNodes events), more than the %d a scenario may have", nodes, MaxNodes)
	}
	if pods > MaxPods && !podsOver {
		bad("pods", "%d pods in all, more than the %d a scenario may have", pods, MaxPods)
	}
}

func (g *NodeGroup) validate(f string, bad func(string, string, ...any)) {
	if g.Name == "" {
		bad(f+".name", "must not be empty")
	}
	if g.Count < 0 {
		bad(f+".count", "must not be negative, got %d", g.Count)
	}
	if g.Zones < 0 {
		bad(f+".zones", "must not be negative, got %d", g.Zones)
	}
	g.validateNames(f, bad)
	if _, err := resources(g.Capacity); err != nil {
		bad(f+".capacity", "%v", err)
	}
	for i, t := range g.Taints {
		t.validate(fmt.Sprintf("%s.taints[%d]", f, i), bad)
	}
}

func (t TaintSpec) validate(f string, bad func(string, string, ...any)) {
	if t.Key == "" {
		bad(f+".key", "must not be empty")
	} else if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
		bad(f+".key", "%q is not a valid taint key: %s", t.Key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
		bad(f+".value", "%q is not a valid taint value: %s", t.Value, strings.Join(errs, "; "))
	}
	switch v1.TaintEffect(t.Effect) {
	case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		bad(f+".effect", "%q is not NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
}

func (g *PodGroup) validate(f string, bad func(string, string, ...any)) {
	if g.Name == "" {
		bad(f+".name", "must not be empty")
	}
	if g.Count < 0 {
		bad(f+".count", "must not be negative, got %d", g.Count)
	}
	if _, err := resources(g.Requests); err != nil {
		bad(f+".requests", "%v", err)
	}
	if g.Arrival.At < 0 {
		bad(f+".arrival.at", "must not be negative, got %v", g.Arrival.At)
	}
	g.Arrival.validate(f+".arrival", g.Count, bad)
	for _, list := range []struct {
		name  string
		terms []TermSpec
	}{{"affinity", g.Affinity}, {"antiAffinity", g.AntiAffinity}} {
		for i, t := range list.terms {
			if t.TopologyKey == "" {
				bad(fmt.Sprintf("%s.%s[%d].topologyKey", f, list.name, i), "must not be empty (for example kubernetes.io/hostname or %s)", zoneLabel)
			}
		}
	}
	if g.Gang != nil {
		g.Gang.validate(f+".gang", bad)
		g.validateLastGang(f+".gang", bad)
	}
	g.validateNames(f, bad)
	g.validateUpstream(f, bad)
	for i, t := range g.Tolerations {
		t.validate(fmt.Sprintf("%s.tolerations[%d]", f, i), bad)
	}
}

// validate refuses what the API server refuses in a toleration: an
// unknown operator or effect (a toleration of effect NoSchedul tolerates
// nothing), a value with Exists, an invalid key or value.
func (t TolerationSpec) validate(f string, bad func(string, string, ...any)) {
	switch v1.TolerationOperator(t.Operator) {
	case "", v1.TolerationOpEqual:
	case v1.TolerationOpExists:
		if t.Value != "" {
			bad(f+".value", "must be empty with operator Exists, got %q", t.Value)
		}
	default:
		bad(f+".operator", "%q is not Equal or Exists", t.Operator)
	}
	switch v1.TaintEffect(t.Effect) {
	case "", v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	default:
		bad(f+".effect", "%q is not NoSchedule, PreferNoSchedule or NoExecute (or empty: all effects)", t.Effect)
	}
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			bad(f+".key", "%q is not a valid taint key: %s", t.Key, strings.Join(errs, "; "))
		}
	}
	if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
		bad(f+".value", "%q is not a valid taint value: %s", t.Value, strings.Join(errs, "; "))
	}
}

// validate refuses a rate that is negative, not a number or infinite,
// and one so slow that the group's last pod would arrive after the
// longest virtual time a run can have (time.Duration's).
func (a ArrivalSpec) validate(f string, count int, bad func(string, string, ...any)) {
	switch r := a.Rate; {
	case r < 0:
		bad(f+".rate", "must not be negative, got %v", r)
	case math.IsNaN(r) || math.IsInf(r, 0):
		bad(f+".rate", "must be a number of pods per second, got %v", r)
	case r > 0 && a.At >= 0 && float64(count-1)/r*float64(time.Second) >= float64(math.MaxInt64-a.At):
		bad(f+".rate", "%v pods/s: the last of %d pods would arrive after the longest virtual time (%v)", r, count, time.Duration(math.MaxInt64))
	}
}

// resources parses a resource map such as {cpu: 500m, memory: 1Gi}. Its
// error names the first bad resource by name, so that it is the same
// from run to run.
func resources(m map[string]string) (v1.ResourceList, error) {
	rl := v1.ResourceList{}
	for _, k := range sortedKeys(m) {
		v := m[k]
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a quantity", k, v)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s: must not be negative, got %s", k, v)
		}
		rl[v1.ResourceName(k)] = q
	}
	return rl, nil
}

func resourceQuantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// settable lists the keys Set takes, for --compare.
var settable = []string{"gangs", "popFromBackoff", "hints", "wakeBudget", "disableBackoff", "initialBackoff", "maxBackoff", "maxInUnschedulable",
	"attemptCost", "bindLatency", "scoring", "percentageOfNodesToScore", "seed", "fairness", "gpuModel", "gpuPolicy", "plugins", "config"}

// Settable lists the keys Set takes (and --compare), besides the alias
// queueingHints of hints.
func Settable() []string { return slices.Clone(settable) }

// Set changes one setting by name, as in "popFromBackoff=false" or
// "hints=false", and validates the result.
func (s *Scenario) Set(key, value string) error {
	boolean := func() (*bool, error) {
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not true or false", key, value)
		}
		return &b, nil
	}
	duration := func(d *time.Duration) error {
		v, err := time.ParseDuration(value)
		if err != nil {
			return fmt.Errorf("%s: %q is not a duration", key, value)
		}
		*d = v
		return nil
	}
	var err error
	switch key {
	case "popFromBackoff":
		s.Queue.PopFromBackoff, err = boolean()
	case "hints", "queueingHints":
		s.Queue.QueueingHints, err = boolean()
	case "wakeBudget":
		s.Queue.WakeBudget, err = boolean()
	case "disableBackoff":
		var b *bool
		if b, err = boolean(); err == nil {
			s.Queue.DisableBackoff = *b
		}
	case "initialBackoff":
		err = duration(&s.Queue.InitialBackoff)
	case "maxBackoff":
		var d time.Duration
		if err = duration(&d); err == nil {
			s.Queue.MaxBackoff = &d
		}
	case "maxInUnschedulable":
		err = duration(&s.Queue.MaxInUnschedulable)
	case "attemptCost":
		err = duration(&s.Scheduler.AttemptCost)
	case "bindLatency":
		err = duration(&s.Scheduler.BindLatency)
	case "scoring":
		s.Scheduler.Scoring = value
	case "percentageOfNodesToScore":
		if s.Scheduler.PercentageOfNodesToScore, err = strconv.Atoi(value); err != nil {
			err = fmt.Errorf("%s: %q is not a whole number from 0 to 100", key, value)
		}
	case "gangs":
		s.Scheduler.Gangs, err = boolean()
	case "seed":
		if s.Seed, err = strconv.ParseUint(value, 10, 64); err != nil {
			err = fmt.Errorf("%s: %q is not a whole number from 0 to %d", key, value, uint64(math.MaxUint64))
		}
	case "gpuModel":
		s.Scheduler.GPUModel = value
	case "gpuPolicy":
		s.Scheduler.GPUPolicy = value
	case "plugins":
		s.Scheduler.Plugins = value
	case "config":
		s.Scheduler.Config = value
	case "fairness":
		var b *bool
		if b, err = boolean(); err == nil {
			s.Queue.Fairness = *b
		}
	default:
		return fmt.Errorf("unknown setting %q (settable: %s)", key, strings.Join(settable, ", "))
	}
	if err != nil {
		return err
	}
	return s.Validate()
}

// backoffOff reports whether the queue runs with no backoff: disableBackoff,
// or maxBackoff set to 0.
func (q QueueSpec) backoffOff() bool {
	return q.DisableBackoff || q.MaxBackoff != nil && *q.MaxBackoff == 0
}

func deref(d *time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return *d
}

// The peak memory a run takes per pod and per node, measured once with
// SchedulingBasic at 50,000 nodes × 100,000 pods (687 MiB of peak RSS;
// docs/simulator-performance.md), rounded up.
const (
	MemoryPerPod  = 6 << 10
	MemoryPerNode = 2 << 10
)

// MemoryEstimate is about the peak memory, in bytes, that a run of the
// scenario takes, from its nodes (node groups and addNodes events) and
// its pods, before anything is built. A trace's and a snapshot's objects
// are not counted: they are not read yet. O(groups + events).
func (s *Scenario) MemoryEstimate() (bytes int64, nodes, pods int) {
	for _, g := range s.Nodes {
		nodes += max(g.Count, 0)
	}
	for _, e := range s.Events {
		if e.AddNodes != nil {
			nodes += max(e.AddNodes.Count, 0)
		}
	}
	for _, g := range s.Pods {
		pods += max(g.Count, 0)
	}
	return int64(nodes)*MemoryPerNode + int64(pods)*MemoryPerPod, nodes, pods
}
