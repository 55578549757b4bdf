// Package yamlnum finds the number a YAML document holds that JSON cannot:
// a NaN or an infinity, which the decoders of Kubernetes objects (YAML
// turned into JSON first) refuse as "json: unsupported value: NaN",
// naming neither its line nor its field.
package yamlnum

import (
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"
)

// NonFinite names the first NaN or infinity of data, a YAML document, by
// its line and field path ("line 9: spec.priority: .nan is not a finite
// number"); "" if data holds none or does not parse. O(len(data)).
func NonFinite(data []byte) string {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return ""
	}
	return find(&doc, "")
}

func find(n *yaml.Node, path string) string {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if s := find(c, path); s != "" {
				return s
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			at := n.Content[i].Value
			if path != "" {
				at = path + "." + at
			}
			if s := find(n.Content[i+1], at); s != "" {
				return s
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if s := find(c, fmt.Sprintf("%s[%d]", path, i)); s != "" {
				return s
			}
		}
	case yaml.ScalarNode:
		if n.ShortTag() != "!!float" {
			return ""
		}
		var f float64
		if n.Decode(&f) == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return fmt.Sprintf("line %d: %s: %s is not a finite number", n.Line, path, n.Value)
		}
	}
	return ""
}
