package sim

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// nodeGroupOf names the scenario's node group (of nodes or of an addNodes
// event) that makes a node called name, "" if none: node i of group G is
// G-i. A snapshot's or a trace's node of that name would be replaced by
// it, or replace it. O(node groups + events).
func (s *Scenario) nodeGroupOf(name string) string {
	base, i, ok := splitIndex(name)
	if !ok {
		return ""
	}
	for _, g := range s.Nodes {
		if g.Name == base && i < g.Count {
			return g.Name
		}
	}
	for _, e := range s.Events {
		if g := e.AddNodes; g != nil && g.Name == base && i < g.Count {
			return g.Name
		}
	}
	return ""
}

// podGroupOf names the scenario's pod group that makes a pod of key, ""
// if none: pod i of group G is G-i in G's namespace. O(pod groups).
func (s *Scenario) podGroupOf(key types.NamespacedName) string {
	base, i, ok := splitIndex(key.Name)
	if !ok {
		return ""
	}
	for _, g := range s.Pods {
		if g.Name == base && cmpOr(g.Namespace, "default") == key.Namespace && i < g.Count {
			return g.Name
		}
	}
	return ""
}

// splitIndex splits G-i into G and i, written as podName writes it.
func splitIndex(name string) (string, int, bool) {
	at := strings.LastIndexByte(name, '-')
	if at < 0 {
		return "", 0, false
	}
	i, err := strconv.Atoi(name[at+1:])
	if err != nil || i < 0 || strconv.Itoa(i) != name[at+1:] {
		return "", 0, false
	}
	return name[:at], i, true
}

// validateGroupNames refuses a node or pod group named as the group the
// simulator files a trace's or a snapshot's objects under, when the
// scenario has one: events that select the group would pick those too.
func (s *Scenario) validateGroupNames(bad func(string, string, ...any)) {
	reserved := map[string]string{}
	if s.Trace != nil {
		reserved[traceGroup] = "the trace's"
	}
	if s.Snapshot != "" {
		reserved[snapshotGroup] = "the snapshot's"
	}
	if len(reserved) == 0 {
		return
	}
	check := func(field, name, kind string) {
		if whose, ok := reserved[name]; ok {
			bad(field, "%q names %s %s; rename the group", name, whose, kind)
		}
	}
	for i, g := range s.Nodes {
		check(fmt.Sprintf("nodes[%d].name", i), g.Name, "nodes")
	}
	for i, e := range s.Events {
		if e.AddNodes != nil {
			check(fmt.Sprintf("events[%d].addNodes.name", i), e.AddNodes.Name, "nodes")
		}
	}
	for i, g := range s.Pods {
		check(fmt.Sprintf("pods[%d].name", i), g.Name, "pods")
	}
}

// validateNames checks that the group's nodes get valid names and
// kubernetes.io/hostname labels, and that its labels are valid: the
// plugins would otherwise refuse a selector of them at every attempt.
func (g *NodeGroup) validateNames(f string, bad func(string, string, ...any)) {
	if g.Name != "" {
		last := g.Name + "-" + strconv.Itoa(max(g.Count-1, 0))
		if errs := append(validation.IsDNS1123Subdomain(last), validation.IsValidLabelValue(last)...); len(errs) > 0 {
			bad(f+".name", "%q makes node names such as %q, which are not valid: %s", g.Name, last, strings.Join(errs, "; "))
		}
	}
	validateLabels(f+".labels", g.Labels, bad)
}

// validateNames checks that the group's pods get valid names, namespace
// and group label, and that its labels and selectors are valid.
func (g *PodGroup) validateNames(f string, bad func(string, string, ...any)) {
	if g.Name != "" {
		last := g.Name + "-" + strconv.Itoa(max(g.Count-1, 0))
		if errs := append(validation.IsDNS1123Subdomain(last), validation.IsValidLabelValue(g.Name)...); len(errs) > 0 {
			bad(f+".name", "%q is not valid as the pods' group label and in their names (such as %q): %s", g.Name, last, strings.Join(errs, "; "))
		}
	}
	if g.Namespace != "" {
		if errs := validation.IsDNS1123Label(g.Namespace); len(errs) > 0 {
			bad(f+".namespace", "%q is not a valid namespace: %s", g.Namespace, strings.Join(errs, "; "))
		}
	}
	validateLabels(f+".labels", g.Labels, bad)
	validateLabels(f+".nodeSelector", g.NodeSelector, bad)
	for _, list := range []struct {
		name  string
		terms []TermSpec
	}{{"affinity", g.Affinity}, {"antiAffinity", g.AntiAffinity}} {
		for i, t := range list.terms {
			validateLabels(fmt.Sprintf("%s.%s[%d].matchLabels", f, list.name, i), t.MatchLabels, bad)
		}
	}
}

// validateLabels checks each key and value of a label map or selector,
// in key order.
func validateLabels(f string, m map[string]string, bad func(string, string, ...any)) {
	for _, k := range sortedKeys(m) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			bad(f, "%q is not a valid label key: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(m[k]); len(errs) > 0 {
			bad(f+"."+k, "%q is not a valid label value: %s", m[k], strings.Join(errs, "; "))
		}
	}
}
