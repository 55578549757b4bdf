package cluster

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// auditPolicy logs who bound which pod to which node, who wrote which
// lease (with the record written), who deleted which node, and nothing
// else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Request
    verbs: [create]
    resources: [{group: "", resources: [pods/binding]}]
  - level: Request
    verbs: [create, update]
    resources: [{group: coordination.k8s.io, resources: [leases]}]
  - level: Metadata
    verbs: [delete]
    resources: [{group: "", resources: [nodes]}]
  - level: None
`

// AuditLog is the path of the API server's audit log (Options.Audit):
// JSON lines of audit.k8s.io/v1 Events, for bindings, lease writes and
// node deletions.
func (c *Cluster) AuditLog() string { return c.path("audit.log") }

// TokenFor returns the token of one of Options.Users.
func (c *Cluster) TokenFor(user string) (string, error) {
	tok, ok := c.userTokens[user]
	if !ok {
		return "", fmt.Errorf("user %q is not in Options.Users", user)
	}
	return tok, nil
}

// KubeconfigFor writes (once) and returns a kubeconfig file for one of
// Options.Users.
func (c *Cluster) KubeconfigFor(user string) (string, error) {
	tok, err := c.TokenFor(user)
	if err != nil {
		return "", err
	}
	path := c.path("kubeconfig-" + user)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["schedq-e2e"] = &clientcmdapi.Cluster{Server: c.Host(), CertificateAuthorityData: c.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: tok}
	cfg.Contexts["schedq-e2e"] = &clientcmdapi.Context{Cluster: "schedq-e2e", AuthInfo: user}
	cfg.CurrentContext = "schedq-e2e"
	return path, clientcmd.WriteToFile(*cfg, path)
}
