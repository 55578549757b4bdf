package scheduler

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/schedq/schedq/hack/e2e/cluster"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	RequestObject   struct {
		Spec struct { // a Lease's
			HolderIdentity *string `json:"holderIdentity"`
		} `json:"spec"`
		Target struct { // a Binding's
			Name string `json:"name"`
		} `json:"target"`
	} `json:"requestObject"`
}

func (e auditEvent) ok() bool { return e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300 }

// audit reads the completed requests of the cluster's audit log.
func audit(t testing.TB, c *cluster.Cluster) []auditEvent {
	t.Helper()
	f, err := os.Open(c.AuditLog())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var e auditEvent
			if jerr := json.Unmarshal(line, &e); jerr == nil && e.Stage == "ResponseComplete" {
				out = append(out, e)
			}
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// bindings are the binding requests of namespace ns.
func bindings(events []auditEvent, ns string) []auditEvent {
	var out []auditEvent
	for _, e := range events {
		if e.ObjectRef.Resource == "pods" && e.ObjectRef.Subresource == "binding" && e.ObjectRef.Namespace == ns {
			out = append(out, e)
		}
	}
	return out
}

// acquired returns when user first wrote lease with itself as holder,
// successfully, at or after since.
func acquired(events []auditEvent, lease, user string, since time.Time) (time.Time, bool) {
	for _, e := range events {
		if e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == lease && e.User.Username == user && e.ok() &&
			e.RequestObject.Spec.HolderIdentity != nil && *e.RequestObject.Spec.HolderIdentity != "" &&
			!e.RequestReceived.Before(since) {
			return e.RequestReceived, true
		}
	}
	return time.Time{}, false
}

// doubleBinds lists the pods of ns with more than one successful binding.
func doubleBinds(events []auditEvent, ns string) []string {
	n := map[string]int{}
	for _, e := range bindings(events, ns) {
		if e.ok() {
			n[e.ObjectRef.Name]++
		}
	}
	var out []string
	for pod, k := range n {
		if k > 1 {
			out = append(out, fmt.Sprintf("%s (%d)", pod, k))
		}
	}
	return out
}

// readyzBody returns the body of a replica's /readyz ("" if unreachable).
func readyzBody(addr string) string {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

// boundCount is how many pods of ns are bound.
func boundCount(b map[string]string) int {
	n := 0
	for _, node := range b {
		if node != "" {
			n++
		}
	}
	return n
}
