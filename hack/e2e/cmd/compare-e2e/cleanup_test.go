package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// cleanup says what it could not delete, so that no later run shares the
// cluster with a run's nodes unknowingly; what is already gone is no error.
func TestEnvCleanup(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failOn  string // resource whose delete fails
		missing bool   // the node is already gone
		want    string // part of the error; "" for none
	}{
		{"everything deleted", "", false, ""},
		{"a node already gone", "", true, ""},
		{"a node that cannot be deleted", "nodes", false, "node ns-node-0"},
		{"a namespace that cannot be deleted", "namespaces", false, "namespace ns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}}
			if !tc.missing {
				objs = append(objs, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ns-node-0"}})
			}
			client := fake.NewSimpleClientset(objs...)
			if tc.failOn != "" {
				client.PrependReactor("delete", tc.failOn, func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("etcd is away")
				})
			}
			e := &env{client: client, ns: "ns", nodes: []string{"ns-node-0"}}
			err := e.cleanup()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("cleanup = %v, want nil", err)
				}
				if _, err := client.CoreV1().Nodes().Get(context.Background(), "ns-node-0", metav1.GetOptions{}); err == nil {
					t.Errorf("the node is still there")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("cleanup = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}
