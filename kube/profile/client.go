package profile

import "k8s.io/client-go/kubernetes/fake"

// FakeClient returns a clientset with no API server behind it, for a
// framework over the synchronous informers (the simulator's): the plugins'
// writes that no reactor answers are kept by a plain object tracker.
//
// It is client-go's simple fake clientset, not its NewClientset: that one
// manages fields for server-side apply, which nothing here uses, and its
// first call in a process parses client-go's whole apply schema, about
// 0.15 s of CPU (6% of SchedulingBasic's run). O(1). The clientset is safe
// for concurrent use.
func FakeClient() *fake.Clientset {
	return fake.NewSimpleClientset()
}
