package profile

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// TestFrameworkHasAnEventRecorder: the framework's plugins can record
// events. DynamicResources' PreBind records BindingConditionsPending
// through it for a pod whose device has binding conditions
// (DRADeviceBindingConditions, beta and on in v1.37) before it waits
// for them; without a recorder that call dereferenced nil and PreBind
// panicked, so that neither the live scheduler nor the simulator could
// ever bind such a pod. A framework built without Setup.Recorder drops
// the events.
func TestFrameworkHasAnEventRecorder(t *testing.T) {
	f := defaultFramework(t, Cluster{})
	rec := f.Framework().EventRecorder()
	if rec == nil {
		t.Fatal("the framework has no event recorder")
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p"}}
	rec.WithLogger(klog.Background()).Eventf(p, nil, v1.EventTypeNormal, "BindingConditionsPending", "Scheduling", "waiting for binding conditions for device on node %s", "n")
}
