package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/schedq/schedq"
	"github.com/schedq/schedq/kube/gpu"
)

// ForecastState is the state a forecast starts from: what the scheduler
// holds at one instant. The forecast only reads it.
type ForecastState struct {
	// Now is the instant of the state.
	Now        time.Time
	Namespaces []*v1.Namespace
	Nodes      []*v1.Node
	// Running are the bound pods, with when each started.
	Running []RunningPod
	// Pending are the queue's pods in the order they wait (activeQ in
	// pop order, then backoffQ, then the parked pods); a nominated pod
	// carries its node in Status.NominatedNodeName. With one profile
	// they are named SchedulerName; with several (SchedulerSpec.Profiles)
	// each keeps its profile's name, and is scheduled by that profile's
	// framework (one that names none the simulator would take is left
	// alone: it never starts).
	Pending []*v1.Pod
	// Queued says how the queue held each pending pod it lists, by UID:
	// where (activeQ, backoffQ or parked after a failed attempt) and its
	// history there (schedq.Status: its attempts and failures, the
	// plugins that rejected it last, its timestamp, its backoff's
	// expiry). The forecast's queue restores each as it was
	// (schedq.Core.Restore): a parked pod waits for the events its
	// plugins name, in the order of the timestamps, as the queue would
	// (queued to be tried at once, the attempts the queue does not make
	// would take virtual time, and room freed meanwhile would go to pods
	// behind them in that pass); a pod backing off is tried when its
	// backoff ends, not at once; a pod in activeQ keeps its place among
	// its equals, which its timestamp gives; and each failure in the run
	// backs a pod off as long as the live queue would, from the failures
	// it had. Members of a group are queued as pods not tried yet; a pod
	// not listed (in flight at the copy) too, first among its equals.
	Queued    map[types.UID]QueuedPod
	PodGroups []*schedulingv1beta1.PodGroup
	// Objects are the cluster's volumes and claims and DRA's objects, the
	// kinds a snapshot keeps besides nodes, pods and namespaces
	// (PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode,
	// DeviceClass, ResourceSlice, ResourceClaim, ResourceClaimTemplate):
	// without them a pending pod that mounts a claim or asks for a device
	// could never start in the forecast, and the devices running pods
	// hold would count as free.
	Objects []runtime.Object
	// Budgets are the PodDisruptionBudgets that preemption respects where
	// it can (their status is computed in the forecast, as the disruption
	// controller would); a replay's come from its snapshot.
	Budgets []*policyv1.PodDisruptionBudget
	// TemplatesUnlisted says Objects may lack ResourceClaimTemplates: the
	// live scheduler has not listed them (its role may not grant it). A
	// what-if pod that claims from a template is then refused, since its
	// claim could not be made.
	TemplatesUnlisted bool
	// Recent are the pods that arrived in the Window before Now, with
	// their arrival times, for ForecastOptions.Arrivals.
	Recent []Arrival
	Window time.Duration
	// gpuWorkload is the typical GPU workload of the trace replay the
	// state was taken from (Replay.State), for FGD in the forecast as in
	// the replay; nil otherwise.
	gpuWorkload gpu.Workload
	// tieBreak is the state of the replay's source of tie-breaks between
	// equally scored nodes (Replay.State), which the forecast's scheduler
	// goes on from: with another, a forecast's pod would land on another
	// of equal nodes than in the replay. Nil otherwise (the live
	// scheduler's): the forecast starts from the scenario's seed.
	tieBreak []byte
	// busyUntil is when the replay's scheduler ends the attempt it is in
	// at the state's instant (Scheduler.AttemptCost), if it is in one:
	// the forecast's first attempt waits for it, as the replay's next
	// does. Zero otherwise (the live scheduler's: its attempt's end is
	// not known).
	busyUntil time.Time
}

// RunningPod is a bound pod and when it started. A pod whose binding is
// under way at the state's instant runs on the node it is being bound to:
// the live scheduler's copy has it start at the state's instant, a
// replay's when its binding completes, which may be after it.
type RunningPod struct {
	Pod     *v1.Pod
	Started time.Time
	// GPUs are the node's GPUs the pod holds (their indexes), in a state
	// taken from a trace replay on the GPU device model; without them the
	// forecast places the pod's GPUs again, best fit.
	GPUs []int
}

// QueuedPod is how the queue held a pending pod: where (schedq.InActive,
// InBackoff, InUnschedulable or InGated) and its history there. A gated
// pod is restored in activeQ, where its gate parks it again.
type QueuedPod struct {
	Location schedq.Location
	schedq.Status
}

// QueuedOf is how the queue holds the item x explains, if it is queued
// (in activeQ, backing off, parked or gated) and it is no group member:
// the entry of ForecastState.Queued the replay's and the live
// scheduler's copies of their queue give it. O(plugins).
func QueuedOf[K comparable](x schedq.Explanation[K]) (QueuedPod, bool) {
	switch {
	case x.Group != "":
		return QueuedPod{}, false
	case x.Location == schedq.InActive, x.Location == schedq.InBackoff, x.Location == schedq.InUnschedulable, x.Location == schedq.InGated:
	default:
		return QueuedPod{}, false
	}
	st := x.Status
	st.RejectedBy, st.WaitingOn, st.Reasons = slices.Clone(st.RejectedBy), slices.Clone(st.WaitingOn), slices.Clone(st.Reasons)
	return QueuedPod{Location: x.Location, Status: st}, true
}

// Arrival is a pod and when it arrived.
type Arrival struct {
	Pod *v1.Pod
	At  time.Time
}

// ForecastOptions shape a forecast.
type ForecastOptions struct {
	// Horizon is how far ahead the forecast runs; it must be positive.
	Horizon time.Duration
	// History, if set, estimates the runtimes of pods that declare none.
	History *History
	// Known, if set, gives a pod's whole runtime when the caller knows
	// it (a replayed trace's own durations); it is tried first.
	Known func(*v1.Pod) (time.Duration, bool)
	// Arrivals, if true, repeats the state's recent arrivals (Recent,
	// over Window) for the whole horizon: new pods at the recent rate and
	// mix of priorities. Without it no new pod arrives.
	Arrivals bool
	// Pace, if set, is called on the run's goroutine before each object
	// the run builds (a node, a running or a pending pod; not those of a
	// Base, built before) and each operation of the virtual run (an attempt, a binding, a tick, an
	// end). It may block, to yield the CPU to other work: the live
	// scheduler's forecasts wait in it while the scheduler has pods to
	// try. It must not call into the run.
	Pace func()
	// Context, if set, ends the run with its error once it is done,
	// checked before each step of the virtual run: a what-if whose
	// client went away stops. A run ended so gives its Base back rolled
	// back as after any run, for the next.
	Context context.Context
	// Base, if set, is the state's cluster built once (NewForecastBase of
	// the same state): the run starts from it rather than building it.
	Base *ForecastBase
	// noEnds keeps every running pod running (the what-if's "fits now").
	noEnds bool
}

// MaxHorizon is the longest forecast horizon.
const MaxHorizon = 30 * 24 * time.Hour

// MaxAssumedArrivals is how many pods a forecast with arrivals
// (ForecastOptions.Arrivals) assumes at most: the recent arrivals stop
// repeating there, and the answer says until when they were assumed. A
// busy cluster's hour repeated over a long horizon would otherwise add
// millions of pods to the run.
const MaxAssumedArrivals = 10000

func (o *ForecastOptions) validate() error {
	if o.Horizon <= 0 {
		return fmt.Errorf("forecast horizon must be positive, got %v", o.Horizon)
	}
	if o.Horizon > MaxHorizon {
		return fmt.Errorf("forecast horizon must be at most %v, got %v", MaxHorizon, o.Horizon)
	}
	return nil
}

// Forecast is the predicted start of every pending pod of a state.
type Forecast struct {
	At      time.Time     `json:"at"`
	Horizon time.Duration `json:"horizon"`
	// Arrivals says what the forecast assumes of pods not yet created.
	Arrivals string `json:"arrivals"`
	// Pods are the pending pods, in the state's order.
	Pods []PodForecast `json:"pods"`
	// Ends counts the runtime sources of the running pods.
	Ends []SourceCount `json:"ends"`
	// Unknown counts the running pods whose end is unknown: the forecast
	// lets them run past its horizon.
	Unknown int `json:"unknown"`
	byKey   map[types.NamespacedName]int
}

// PodForecast is one pending pod's predicted start.
type PodForecast struct {
	Pod types.NamespacedName `json:"pod"`
	// Gang is the pod's PodGroup (namespace/name), if any; the members
	// bound by the gang's start (its minCount-th binding) get that start,
	// a member beyond minCount bound later its own, one never bound none.
	Gang string `json:"gang,omitempty"`
	// Starts is false when the pod does not start within the horizon.
	Starts bool          `json:"starts"`
	Start  time.Time     `json:"start,omitzero"`
	Wait   time.Duration `json:"wait"` // Start − At
	Node   string        `json:"node,omitempty"`
	// Basis counts, per source, the estimated ends of pods that came
	// before the predicted start (or within the horizon, for a pod that
	// does not start): the estimates the prediction rests on.
	Basis []SourceCount `json:"basis,omitempty"`
	// Unknown is how many pods with an unknown end the forecast kept
	// running: the running pods', and those of the pods it started before
	// the pod's start (within the horizon, for a pod that does not start)
	// and not removed since. The pod may start earlier
	// if they end.
	Unknown int `json:"unknown,omitempty"`
}

// SourceCount is how many estimates came from one source.
type SourceCount struct {
	Source string `json:"source"`
	Count  int    `json:"count"`
}

// Of returns the forecast of one pod, and an error if the pod was not
// pending in the state.
func (f *Forecast) Of(key types.NamespacedName) (PodForecast, error) {
	i, ok := f.byKey[key]
	if !ok {
		return PodForecast{}, fmt.Errorf("pod %s is not pending: a forecast is only of pending pods", key)
	}
	return f.Pods[i], nil
}

// ErrNoNodes is returned for a state without nodes.
var ErrNoNodes = errors.New("the state has no nodes")

// RunForecast runs the scheduler of scenario sc (its profile, queue
// settings, preemption and seed; its workload is ignored) forward from
// st in virtual time until every pending pod is placed or the horizon
// passes, in a fresh simulator instance, and returns the predicted start
// of every pending pod. One run serves every pod. Nothing is written.
// Deterministic: the same inputs give the same forecast.
func RunForecast(sc *Scenario, st *ForecastState, o ForecastOptions) (*Forecast, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if len(st.Nodes) == 0 {
		return nil, ErrNoNodes
	}
	r, err := newForecastRun(sc, st, &o, nil)
	if err != nil {
		return nil, err
	}
	defer func() { r.closeOnPanic(recover()) }()
	if err := r.s.loop(); err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	return r.result(), nil
}
