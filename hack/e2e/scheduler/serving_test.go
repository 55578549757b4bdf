package scheduler

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/schedq/schedq/hack/e2e/cluster"
	"github.com/schedq/schedq/kube/app"
)

// 10. Secure serving against a real API server with RBAC: the HTTPS port
// answers /healthz, /livez and /readyz to anyone; /metrics and
// /debug/queue refuse requests without credentials (401) and callers RBAC
// does not allow (403, by SubjectAccessReview), and answer a caller bound
// to the manifest's schedq-metrics-reader role (token by TokenReview).
func TestSecureServing(t *testing.T) {
	own := cluster.ForTest(t, cluster.Options{Users: []string{"nobody", "reader"}, APIServerFlags: []string{"--authorization-mode=RBAC"}})
	c, err := kubernetes.NewForConfig(own.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, portStr, _ := net.SplitHostPort(freeAddr(t))
	port, _ := strconv.Atoi(portStr)
	so := app.NewServingOptions()
	so.Secure.BindAddress = net.IPv4(127, 0, 0, 1)
	so.Secure.BindPort = port
	s := runInProcess(t, app.Options{Kubeconfig: own.Kubeconfig(), SchedulerName: "schedq-secure", Serving: so, QPS: 50, Burst: 100})
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	}()
	// The certificate is self-signed in memory: what is tested here is
	// who may read, not the server's identity.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	get := func(path, token string) int {
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor(t, time.Minute, "the HTTPS port to be ready", func(context.Context) (bool, error) { return get("/readyz", "") == 200, nil })
	nobody, err := own.TokenFor("nobody")
	if err != nil {
		t.Fatal(err)
	}
	reader, err := own.TokenFor("reader")
	if err != nil {
		t.Fatal(err)
	}
	check := func(who, token string, want map[string]int) {
		t.Helper()
		for path, code := range want {
			if got := get(path, token); got != code {
				t.Errorf("%s GET %s: %d, want %d", who, path, got, code)
			}
		}
	}
	check("anonymous", "", map[string]int{"/healthz": 200, "/livez": 200, "/readyz": 200,
		"/metrics": 401, "/debug/queue": 401, "/debug/queue/default/p": 401})
	check("a bad token", "not-a-token", map[string]int{"/metrics": 401, "/debug/queue": 401})
	check("user nobody", nobody, map[string]int{"/healthz": 200, "/metrics": 403, "/debug/queue": 403})
	check("system:masters", own.Token(), map[string]int{"/metrics": 200, "/debug/queue?limit=10": 200})

	// The manifest's reader role, bound to user reader.
	bg := context.Background()
	if _, err := c.RbacV1().ClusterRoles().Create(bg, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "schedq-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics", "/debug/queue", "/debug/queue/*"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(bg, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "schedq-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "schedq-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "reader"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// RBAC's informers and the authorizer's 10s deny cache may lag the
	// binding a moment.
	waitFor(t, 30*time.Second, "the reader's binding to take effect", func(context.Context) (bool, error) {
		return get("/metrics", reader) == 200, nil
	})
	check("user reader", reader, map[string]int{"/metrics": 200, "/debug/queue": 200, "/debug/queue/default/p": 404})
	figure(t, "HTTPS port with RBAC: anonymous 401, unbound user 403, schedq-metrics-reader 200 on /metrics and /debug/queue; health endpoints open")
}
