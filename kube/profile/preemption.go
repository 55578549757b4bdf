package profile

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	feature "k8s.io/apiserver/pkg/util/feature"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// capturePreemption replaces DefaultPreemption's factory in r with one
// that builds the plugin with asynchronous preemption off and records the
// instance in *dp, so that its owner can route evictions and listers
// through its own code (Framework.Preemption). The plugin's other gates
// are the process's. A registry without DefaultPreemption is left as is.
//
// Asynchronous preemption (gate SchedulerAsyncPreemption) would delete
// the victims on a goroutine of the plugin's own and gate the preemptor
// at PreEnqueue until they go. The executor here runs within the cycle,
// and its eviction hook is the owner's (the scheduler hands the victims
// to its own evictor after the cycle), so the cycle stays deterministic.
func capturePreemption(r frameworkruntime.Registry, dp **defaultpreemption.DefaultPreemption) {
	if _, ok := r[defaultpreemption.Name]; !ok {
		return
	}
	r[defaultpreemption.Name] = func(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
		fts := plfeature.NewSchedulerFeaturesFromGates(feature.DefaultFeatureGate)
		fts.EnableAsyncPreemption = false
		p, err := defaultpreemption.New(ctx, args, fh, fts)
		if err != nil {
			return nil, err
		}
		*dp = p
		return p, nil
	}
}

// Preemption returns the profile's DefaultPreemption plugin, nil if the
// profile does not enable it. Its executor runs synchronously (see
// capturePreemption); by default it deletes victims through the
// framework's clientset, which the scheduler replaces
// (Executor.PreemptPod) with its own evictor.
func (f *Framework) Preemption() *defaultpreemption.DefaultPreemption { return f.dp }
