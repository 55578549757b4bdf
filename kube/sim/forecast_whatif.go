package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	schedulingvalidation "k8s.io/kubernetes/pkg/apis/scheduling/v1beta1"

	"github.com/schedq/schedq/kube/framework"
)

// Limits of a what-if request.
const (
	MaxWhatIfBytes   = 1 << 20 // the manifests, in bytes
	MaxWhatIfObjects = 1000    // pods and PodGroups together
)

// WhatIfInput is what a what-if adds: pods and PodGroups as they would be
// created.
type WhatIfInput struct {
	Pods      []*v1.Pod
	PodGroups []*schedulingv1beta1.PodGroup
	// Profiles are the scheduler names (spec.schedulerName) a pod may
	// give, the scheduler's profiles: the simulated scheduler schedules
	// them. An empty name is the default profile's, as the API server's
	// defaulting makes it. Nil means the simulator's own: SchedulerName
	// and the default scheduler's, which it takes over. A pod naming
	// another scheduler is refused, since no profile would schedule it.
	// Several (the scenario runs several profiles, SchedulerSpec.Profiles)
	// keep each pod under its profile (simulatedName).
	Profiles []string

	named bool // check has given the pods the simulated scheduler's name
}

// ParseWhatIf reads manifests (YAML or JSON documents, or Lists) of Pods
// and PodGroups. It refuses anything else, and more than the limits.
func ParseWhatIf(data []byte) (*WhatIfInput, error) {
	if len(data) > MaxWhatIfBytes {
		return nil, fmt.Errorf("%d bytes, more than the limit of %d", len(data), MaxWhatIfBytes)
	}
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	in := &WhatIfInput{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var add func(doc []byte, where string) error
	add = func(doc []byte, where string) error {
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return fmt.Errorf("%s%s", where+describeObject(doc), decodeError(err, whatIfWanted, doc))
		}
		switch x := obj.(type) {
		case *v1.List:
			for i, item := range x.Items {
				if err := add(item.Raw, fmt.Sprintf("%sitems[%d]: ", where, i)); err != nil {
					return err
				}
			}
		case *v1.Pod:
			in.Pods = append(in.Pods, x)
		case *schedulingv1beta1.PodGroup:
			in.PodGroups = append(in.PodGroups, x)
		default:
			return fmt.Errorf("%skind %s is not a Pod or a PodGroup", where, gvk.Kind)
		}
		if len(in.Pods)+len(in.PodGroups) > MaxWhatIfObjects {
			return fmt.Errorf("more than the limit of %d objects", MaxWhatIfObjects)
		}
		return nil
	}
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 || isComment(doc) {
			continue
		}
		if err := add(doc, fmt.Sprintf("document %d: ", i)); err != nil {
			return nil, err
		}
	}
	if len(in.Pods)+len(in.PodGroups) == 0 {
		return nil, errors.New("no Pod or PodGroup in the manifests")
	}
	return in, nil
}

// whatIfWanted is what a what-if's manifests may hold.
var whatIfWanted = kindsWanted{"one a what-if adds", "Pod or PodGroup", "v1 for a Pod, scheduling.k8s.io/v1beta1 for a PodGroup",
	"a what-if", map[string]string{"Pod": "v1", "PodGroup": "scheduling.k8s.io/v1beta1"}}

// check refuses objects that name a missing namespace, PodGroup,
// ResourceClaim or ResourceClaimTemplate (see draNames), a name already
// taken (a pod's or a PodGroup's, in the state or twice in
// in), a PodGroup without a name, a bound pod, or a pod of a scheduler
// that is not one of in.Profiles; it fills in what the API server would
// (the namespace default, a UID) and gives the pods the simulated
// scheduler's name. base, if not nil, may give the running pods' names.
// O(state + input). Idempotent.
func (in *WhatIfInput) check(st *ForecastState, base *ForecastBase) error {
	if err := in.Validate(); err != nil {
		return err
	}
	nss := map[string]bool{}
	for _, ns := range st.Namespaces {
		nss[ns.Name] = true
	}
	var running map[types.NamespacedName]*v1.Pod // a base's, if of st
	taken := map[types.NamespacedName]bool{}
	if base != nil && base.of(st) {
		running = base.pods
	} else {
		for _, rp := range st.Running {
			taken[framework.Key(rp.Pod)] = true
		}
	}
	for _, p := range st.Pending {
		taken[framework.Key(p)] = true
	}
	claims := draNamesOf(st)
	groups := map[string]bool{}
	for _, pg := range st.PodGroups {
		groups[pg.Namespace+"/"+pg.Name] = true
	}
	for i, pg := range in.PodGroups {
		pg.Namespace = cmpOr(pg.Namespace, "default")
		switch key := pg.Namespace + "/" + pg.Name; {
		case pg.Name == "":
			return fmt.Errorf("PodGroup %d: no name", i+1)
		case !nss[pg.Namespace]:
			return fmt.Errorf("PodGroup %s: namespace %q does not exist", key, pg.Namespace)
		case groups[key]:
			return fmt.Errorf("PodGroup %s: a PodGroup of that name exists already", key)
		}
		if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount < 1 {
			return fmt.Errorf("PodGroup %s/%s: want a gang policy with minCount of at least 1", pg.Namespace, pg.Name)
		}
		groups[pg.Namespace+"/"+pg.Name] = true
	}
	for i, p := range in.Pods {
		p.Namespace = cmpOr(p.Namespace, "default")
		key := framework.Key(p)
		switch {
		case p.Name == "":
			return fmt.Errorf("pod %d: no name", i+1)
		case !nss[p.Namespace]:
			return fmt.Errorf("pod %s: namespace %q does not exist", key, p.Namespace)
		case taken[key] || running[key] != nil:
			return fmt.Errorf("pod %s: a pod of that name exists already", key)
		case p.Spec.NodeName != "":
			return fmt.Errorf("pod %s: names node %s; a what-if pod is one not yet scheduled", key, p.Spec.NodeName)
		}
		if g := framework.GroupName(p); g != "" && !groups[g] {
			return fmt.Errorf("pod %s: PodGroup %s does not exist", key, g)
		}
		if err := checkClaimEntries(p); err != nil {
			return err
		}
		if err := claims.check(p); err != nil {
			return err
		}
		if _, _, err := ParseRuntime(p); err != nil {
			return err
		}
		taken[key] = true
		p.UID = types.UID(fmt.Sprintf("whatif-%d", i+1))
	}
	for _, p := range in.Pods {
		p.Spec.SchedulerName = in.simulatedName(p.Spec.SchedulerName)
	}
	in.named = true
	return nil
}

// simulatedName is the schedulerName under which the simulated scheduler
// places a what-if pod that gives name (one checkSchedulers accepted):
// SchedulerName, unless in.Profiles are several, whose simulator names
// the pods by their profiles (scheduler.config's several profiles); then
// name itself, or for an empty name the default scheduler's profile if
// there is one, else the first. O(profiles).
func (in *WhatIfInput) simulatedName(name string) string {
	switch {
	case len(in.Profiles) < 2:
		return schedulerName
	case name != "":
		return name
	case slices.Contains(in.Profiles, v1.DefaultSchedulerName):
		return v1.DefaultSchedulerName
	}
	return in.Profiles[0]
}

// Validate checks what in's objects say alone, which needs no state, so
// that a caller can refuse them before it builds one (schedq whatif
// before its replay): a pod or PodGroup without a name or named twice, a
// bound pod, a pod of a scheduler not among in.Profiles, a claim entry
// the API server would refuse, a negative request, limit or overhead,
// a runtime annotation that is not a
// duration, a PodGroup whose scheduling policy the API server refuses
// (checkPolicy) or is not a gang's. It changes nothing; check
// adds what needs the state. O(input).
func (in *WhatIfInput) Validate() error {
	if in.named {
		return nil
	}
	if err := in.checkSchedulers(); err != nil {
		return err
	}
	groups := map[string]bool{}
	for i, pg := range in.PodGroups {
		key := cmpOr(pg.Namespace, "default") + "/" + pg.Name
		switch {
		case pg.Name == "":
			return fmt.Errorf("PodGroup %d: no name", i+1)
		case len(validation.IsDNS1123Subdomain(pg.Name)) > 0:
			return fmt.Errorf("PodGroup %s: the name is not one the API server takes: %s", key, validation.IsDNS1123Subdomain(pg.Name)[0])
		case groups[key]:
			return fmt.Errorf("PodGroup %s: a PodGroup of that name exists already", key)
		}
		if err := checkPolicy(pg); err != nil {
			return fmt.Errorf("PodGroup %s: %w", key, err)
		}
		switch {
		case pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount < 1:
			return fmt.Errorf("PodGroup %s: want a gang policy with minCount of at least 1", key)
		}
		groups[key] = true
	}
	pods := map[types.NamespacedName]bool{}
	for i, p := range in.Pods {
		named := *p // the namespace defaulted, for the messages
		named.Namespace = cmpOr(p.Namespace, "default")
		key := framework.Key(&named)
		switch {
		case p.Name == "":
			return fmt.Errorf("pod %d: no name", i+1)
		case len(validation.IsDNS1123Subdomain(p.Name)) > 0:
			return fmt.Errorf("pod %s: the name is not one the API server takes: %s", key, validation.IsDNS1123Subdomain(p.Name)[0])
		case pods[key]:
			return fmt.Errorf("pod %s: a pod of that name exists already", key)
		case p.Spec.NodeName != "":
			return fmt.Errorf("pod %s: names node %s; a what-if pod is one not yet scheduled", key, p.Spec.NodeName)
		case p.Status.Phase != "" && p.Status.Phase != v1.PodPending:
			// Else it was placed and said not to start (Succeeded), or
			// to start at once (Running) wherever it went.
			return fmt.Errorf("pod %s: status.phase %s; a what-if pod is one not yet scheduled (Pending, or no status)", key, p.Status.Phase)
		case p.DeletionTimestamp != nil:
			return fmt.Errorf("pod %s: has a deletionTimestamp; a what-if pod is one being created, not deleted", key)
		}
		if err := checkPod(&named); err != nil { // claim entries, and quantities, as a snapshot's
			return err
		}
		if _, _, err := ParseRuntime(&named); err != nil {
			return err
		}
		pods[key] = true
	}
	return nil
}

// checkPolicy checks pg's spec.schedulingPolicy as the API server does
// on a create, with upstream's declarative validation of
// scheduling.k8s.io/v1beta1: exactly one of basic and gang, and a gang's
// minCount at least 1. The error names the field.
func checkPolicy(pg *schedulingv1beta1.PodGroup) error {
	errs := schedulingvalidation.Validate_PodGroupSchedulingPolicy(context.Background(), operation.Operation{Type: operation.Create},
		fieldpath.NewPath("spec", "schedulingPolicy"), &pg.Spec.SchedulingPolicy, nil)
	return errs.ToAggregate()
}

// checkSchedulers refuses a pod whose schedulerName is neither empty nor
// one of in.Profiles, naming the pod, its schedulerName and the
// profiles. O(pods × profiles).
func (in *WhatIfInput) checkSchedulers() error {
	if in.named {
		return nil
	}
	profiles := in.Profiles
	if profiles == nil {
		profiles = []string{schedulerName, v1.DefaultSchedulerName}
	}
	for i, p := range in.Pods {
		if name := p.Spec.SchedulerName; name != "" && !slices.Contains(profiles, name) {
			what := fmt.Sprint(i + 1)
			if p.Name != "" {
				what = cmpOr(p.Namespace, "default") + "/" + p.Name
			}
			quoted := make([]string, len(profiles))
			for j, n := range profiles {
				quoted[j] = strconv.Quote(n)
			}
			return fmt.Errorf("pod %s: schedulerName %q is not one of the scheduler's profiles (%s); "+
				"no profile would schedule it (leave it empty for the default profile)",
				what, name, strings.Join(quoted, ", "))
		}
	}
	return nil
}

// WhatIf is the answer for each added pod, and what it changes.
type WhatIf struct {
	Pods []WhatIfPod `json:"pods"`
	// Changed are the pending pods whose forecast it changes.
	Changed []ForecastChange `json:"changed"`
	// Pending is how many pods were pending before.
	Pending  int    `json:"pending"`
	Arrivals string `json:"arrivals"`
}

// WhatIfPod is one added pod's answer.
type WhatIfPod struct {
	Pod types.NamespacedName `json:"pod"`
	// FitsNow is true if a node has room for it now, without preempting
	// and ignoring the pods ahead of it in the queue; Node is that node,
	// or the one preemption would free.
	FitsNow  bool                   `json:"fitsNow"`
	Node     string                 `json:"node,omitempty"`
	Preempts []types.NamespacedName `json:"preempts,omitempty"`
	// Reason says why it does not fit now, as its scheduling cycle said
	// (the message of its PodScheduled=False condition; where one cycle
	// answers, without what preemption found, which then could not help);
	// empty if it fits, with or without preempting.
	Reason string `json:"reason,omitempty"`
	// Forecast is its predicted start behind the pods already pending.
	Forecast PodForecast `json:"forecast"`
}

// ForecastChange is a pending pod's forecast without and with the added
// pods.
type ForecastChange struct {
	Pod    types.NamespacedName `json:"pod"`
	Before PodForecast          `json:"before"`
	After  PodForecast          `json:"after"`
}

// whatIfNowHorizon bounds the run that asks whether the pods fit now:
// long enough for preemption's grace periods, with no running pod ending.
const whatIfNowHorizon = 10 * time.Minute

// RunWhatIf adds in to a copy of st and answers, for each added pod,
// whether it fits now and where, which pods it would preempt and when it
// would start; and how the forecasts of the pods already pending change.
// Two forward runs, the forecast without and with them (RunWhatIfFrom
// takes the first, made once for every what-if), and whether a pod fits
// now from one scheduling cycle on the second run's starting state
// (probeNow), or, where one cycle cannot tell (preemption, gangs,
// several pods), a third run of the added pods alone. Nothing is
// written; st and in are not changed except for the defaults check fills
// into in.
func RunWhatIf(sc *Scenario, st *ForecastState, in *WhatIfInput, o ForecastOptions) (*WhatIf, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := in.check(st, o.Base); err != nil { // before any run; idempotent
		return nil, &BadWhatIfError{err}
	}
	if o.Base == nil { // one build for the two or three runs
		b, err := NewForecastBase(st)
		if err != nil {
			return nil, err
		}
		o.Base = b
	}
	before, err := RunForecast(sc, st, o)
	if err != nil {
		return nil, err
	}
	return RunWhatIfFrom(sc, st, before, in, o)
}

// BadWhatIfError is RunWhatIf's error for input the state cannot take:
// an object that names what does not exist there, or asks what the
// model refuses. Any other error is the run's.
type BadWhatIfError struct{ Err error }

func (e *BadWhatIfError) Error() string { return e.Err.Error() }
func (e *BadWhatIfError) Unwrap() error { return e.Err }

// RunWhatIfFrom is RunWhatIf with the forecast of st without the added
// pods already made, with the same options.
func RunWhatIfFrom(sc *Scenario, st *ForecastState, before *Forecast, in *WhatIfInput, o ForecastOptions) (*WhatIf, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if len(st.Nodes) == 0 {
		return nil, ErrNoNodes
	}
	if len(before.Pods) != len(st.Pending) || !before.At.Equal(st.Now) {
		return nil, errors.New("what-if: the forecast given is not of this state")
	}
	if err := in.check(st, o.Base); err != nil {
		return nil, &BadWhatIfError{err}
	}
	templates, err := in.draWhatIf(st)
	if err != nil {
		return nil, &BadWhatIfError{err}
	}
	if len(templates) > 0 { // the runs below see the added pods' templates
		more := *st
		more.Objects = append(slices.Clip(st.Objects), templates...)
		st = &more
	}
	with := *st
	with.PodGroups = append(slices.Clip(st.PodGroups), in.PodGroups...)
	var now []WhatIfPod
	probe := canProbe(sc, st, in)
	if !probe { // before the run below, which holds the base
		if now, err = whatIfNow(sc, st, in, o); err != nil {
			return nil, err
		}
	}
	r, err := newForecastRun(sc, &with, &o, in.Pods)
	if err != nil {
		return nil, err
	}
	defer func() { r.closeOnPanic(recover()) }()
	if probe {
		var ok bool
		if now, ok = r.probeNow(sc, st, in); !ok { // the cycle failed
			alone := o
			alone.Base = nil // r holds it
			if now, err = whatIfNow(sc, st, in, alone); err != nil {
				return nil, err
			}
		}
	}
	if err := r.s.loop(); err != nil {
		return nil, fmt.Errorf("what-if: %w", err)
	}
	after := r.result()
	w := &WhatIf{Pods: now, Pending: len(st.Pending), Arrivals: after.Arrivals}
	for i := range w.Pods {
		w.Pods[i].Forecast = after.Pods[len(st.Pending)+i]
	}
	for i, b := range before.Pods {
		a := after.Pods[i]
		if a.Starts != b.Starts || a.Start != b.Start || a.Node != b.Node {
			w.Changed = append(w.Changed, ForecastChange{Pod: b.Pod, Before: b, After: a})
		}
	}
	return w, nil
}

// whatIfNow places the added pods alone on the cluster as it is, with no
// running pod ending: what binds without victims fits now.
func whatIfNow(sc *Scenario, st *ForecastState, in *WhatIfInput, o ForecastOptions) ([]WhatIfPod, error) {
	alone := *st
	alone.Pending = nil
	alone.PodGroups = append(slices.Clip(st.PodGroups), in.PodGroups...)
	no := ForecastOptions{Horizon: whatIfNowHorizon, noEnds: true, Base: o.Base, Context: o.Context}
	r, err := newForecastRun(sc, &alone, &no, in.Pods)
	if err != nil {
		return nil, err
	}
	defer func() { r.closeOnPanic(recover()) }()
	r.s.x.victimsOf = map[types.NamespacedName][]types.NamespacedName{}
	if err := r.s.loop(); err != nil {
		return nil, fmt.Errorf("what-if: %w", err)
	}
	var out []WhatIfPod
	for _, p := range in.Pods {
		w := WhatIfPod{Pod: framework.Key(p)}
		if s := r.s.stats[p.UID]; s != nil && !s.bound.IsZero() {
			w.Node = s.ext.node
		} else if node, ok := r.s.core.Nomination(framework.Key(p)); ok {
			w.Node = node
		}
		w.Preempts = r.s.x.victimsOf[w.Pod] // its own, not whoever else left the node
		// It fits now if it bound with no victims of its own and no cycle
		// that failed first: one that bound once another added pod's
		// victims had left waited for them.
		st := r.s.stats[p.UID]
		w.FitsNow = w.Node != "" && len(w.Preempts) == 0 && st != nil && !st.bound.IsZero() && st.lastMessage == ""
		if !w.FitsNow && len(w.Preempts) == 0 {
			w.Reason = r.s.notFitting(p)
		}
		out = append(out, w)
	}
	return out, nil
}

// notFitting says why p, added by a what-if, found no node in the run
// that asks whether it fits now: its last attempt's message, or where the
// queue holds it if no attempt failed (gated, or a gang short of its
// members, say). O(1) but for the queue's Explain.
func (s *sim) notFitting(p *v1.Pod) string {
	st := s.stats[p.UID]
	if st == nil {
		return "not tried"
	}
	if st.lastMessage != "" {
		return st.lastMessage
	}
	return s.pendingReason(st)
}
