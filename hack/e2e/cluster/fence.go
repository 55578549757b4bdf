package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimeconv "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/schedq/schedq/kube/scheduler"
)

// Manifest is the path of deploy/schedq.yaml in the source tree this
// package was built from.
func Manifest() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "deploy", "schedq.yaml")
}

// fencePolicy returns the binding fence's policy and its binding as
// deploy/schedq.yaml ships them.
func fencePolicy() (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding, error) {
	f, err := os.Open(Manifest())
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var policy *admissionv1.ValidatingAdmissionPolicy
	var binding *admissionv1.ValidatingAdmissionPolicyBinding
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", Manifest(), err)
		}
		var into any
		switch u.GetKind() {
		case "ValidatingAdmissionPolicy":
			policy = &admissionv1.ValidatingAdmissionPolicy{}
			into = policy
		case "ValidatingAdmissionPolicyBinding":
			binding = &admissionv1.ValidatingAdmissionPolicyBinding{}
			into = binding
		default:
			continue
		}
		if err := runtimeconv.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			return nil, nil, fmt.Errorf("%s: %s: %w", Manifest(), u.GetKind(), err)
		}
	}
	if policy == nil || binding == nil || binding.Spec.ParamRef == nil {
		return nil, nil, fmt.Errorf("%s has no ValidatingAdmissionPolicy with a binding to a Lease", Manifest())
	}
	return policy, binding, nil
}

// BindingFence applies the binding fence deploy/schedq.yaml ships (its
// ValidatingAdmissionPolicy, and a binding of it whose parameter is the
// Lease leaseNamespace/leaseName), waits until the API server enforces
// it, and removes the binding when the test ends.
func (c *Cluster) BindingFence(t testing.TB, leaseNamespace, leaseName string) {
	t.Helper()
	remove, err := c.ApplyBindingFence(context.Background(), leaseNamespace, leaseName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
}

// ApplyBindingFence is BindingFence outside a test: it returns a function
// that removes the policy's binding.
func (c *Cluster) ApplyBindingFence(ctx context.Context, leaseNamespace, leaseName string) (remove func(), err error) {
	policy, binding, err := fencePolicy()
	if err != nil {
		return nil, err
	}
	cs, err := c.Client()
	if err != nil {
		return nil, err
	}
	vap := cs.AdmissionregistrationV1()
	if _, err := vap.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating the policy of %s: %w", Manifest(), err)
	}
	binding.Name += "-" + leaseName
	binding.Spec.ParamRef.Namespace, binding.Spec.ParamRef.Name = leaseNamespace, leaseName
	if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the policy binding: %w", err)
	}
	remove = func() {
		vap.ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	}
	// A dry-run binding stamped with a term no one holds is refused once
	// the policy is in force (the pod need not exist: admission comes
	// first).
	probe := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "schedq-fence-probe", Labels: map[string]string{scheduler.FencedLabel: "true"}, Annotations: map[string]string{
			scheduler.StampLeaseAnnotation: leaseNamespace + "/" + leaseName, scheduler.StampHolderAnnotation: "nobody",
			scheduler.StampTransitionsAnnotation: "-1",
		}},
		Target: v1.ObjectReference{Kind: "Node", Name: "none"},
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	err = wait.PollUntilContextCancel(wctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = cs.CoreV1().Pods("default").Bind(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(last) || apierrors.IsInvalid(last), nil
	})
	if err != nil {
		remove()
		return nil, fmt.Errorf("the binding fence for lease %s/%s is not in force after a minute: last probe: %v", leaseNamespace, leaseName, last)
	}
	return remove, nil
}
