package profile

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/kubernetes/pkg/apis/core/v1/helper"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// fitIgnored is what NodeResourcesFit's args tell it not to count:
// extended resources by name, and by the group before their "/".
type fitIgnored struct {
	names, groups map[string]bool
}

// newFitIgnored reads the ignored resources of prof's NodeResourcesFit
// args, if it has any. O(args).
func newFitIgnored(prof *config.KubeSchedulerProfile) fitIgnored {
	var ig fitIgnored
	for _, pc := range prof.PluginConfig {
		args, ok := pc.Args.(*config.NodeResourcesFitArgs)
		if !ok || pc.Name != "NodeResourcesFit" {
			continue
		}
		ig.names, ig.groups = set(args.IgnoredResources), set(args.IgnoredResourceGroups)
	}
	return ig
}

func set(xs []string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// FitSkips reports whether NodeResourcesFit, as the profile configures
// it, leaves the named resource unchecked on a node with alloc of it: an
// extended resource that its args ignore (ignoredResources,
// ignoredResourceGroups), or, on a node that has none of it, one that a
// DeviceClass provides (its extendedResourceName), which DynamicResources
// allocates from devices instead. The wake budget counts a node's room
// with it, as the Filter does.
//
// It reads the DRA manager's DeviceClass cache under that cache's own
// read lock, a leaf (its writers call nothing while they hold it), so it
// may be called under the queue's lock. O(1).
func (f *Framework) FitSkips(name v1.ResourceName, alloc int64) bool {
	if v1helper.IsExtendedResourceName(name) {
		if f.fitIgnored.names[string(name)] {
			return true
		}
		if group, _, ok := strings.Cut(string(name), "/"); ok && f.fitIgnored.groups[group] {
			return true
		}
	}
	if alloc > 0 {
		return false
	}
	dra := f.fwk.SharedDRAManager()
	return dra != nil && dra.DeviceClassResolver() != nil && dra.DeviceClassResolver().GetDeviceClass(name) != nil
}
