package sim

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
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
