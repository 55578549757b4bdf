package sim

import (
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// fieldHints names the field someone probably meant by a key that is not
// one, for the mistakes people make.
var fieldHints = map[string]string{
	"cordoned":  "unschedulable",
	"cordon":    "unschedulable",
	"replicas":  "count",
	"resources": "requests",
}

// checkFields walks a YAML document against the type it will be decoded
// into and reports, by exact path (pods[0].antiAffinity[0].topologyKey),
// each key that is no field there, with the fields there are, and each
// value of the wrong kind, with the kind it should be.
func checkFields(n *yaml.Node, t reflect.Type, path string, bad func(field, format string, args ...any)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k, ok := reflect.New(t).Interface().(kubeDecoder); ok && n.Kind != yaml.AliasNode {
		if err := k.decodeKube(n); err != nil {
			bad(path, "%v", err)
		}
		return
	}
	switch {
	case n.Kind == yaml.AliasNode, n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return // anchors are checked where they are defined; null is the zero value
	case t == reflect.TypeOf(time.Duration(0)):
		checkScalar(n, t, path, "a duration such as 500ms, 30s or 10m", bad)
	case t.Kind() == reflect.Struct:
		checkStruct(n, t, path, bad)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad(path, "must be a list, got %s", describe(n))
			return
		}
		for i, c := range n.Content {
			checkFields(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i), bad)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad(path, "must be a map of key: value, got %s", describe(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkFields(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), bad)
		}
	case t.Kind() == reflect.Bool:
		checkScalar(n, t, path, "true or false", bad)
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		checkScalar(n, t, path, "a whole number", bad)
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		checkScalar(n, t, path, "a number", bad)
	case t.Kind() == reflect.String:
		checkScalar(n, t, path, "a string", bad)
	}
}

// checkStruct checks a mapping against a struct's yaml fields.
func checkStruct(n *yaml.Node, t reflect.Type, path string, bad func(field, format string, args ...any)) {
	if n.Kind != yaml.MappingNode {
		bad(path, "must be a map of fields (%s), got %s", strings.Join(fieldNames(t), ", "), describe(n))
		return
	}
	fields := yamlFields(t)
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		ft, ok := fields[key]
		if !ok {
			hint := ""
			if want, ok := fieldHints[key]; ok {
				if _, exists := fields[want]; exists {
					hint = fmt.Sprintf("; did you mean %s?", want)
				}
			}
			bad(join(path, key), "unknown field (fields here: %s)%s", strings.Join(fieldNames(t), ", "), hint)
			continue
		}
		checkFields(n.Content[i+1], ft, join(path, key), bad)
	}
}

// checkScalar checks that n decodes into a value of type t.
func checkScalar(n *yaml.Node, t reflect.Type, path, want string, bad func(field, format string, args ...any)) {
	if n.Kind != yaml.ScalarNode {
		bad(path, "must be %s, got %s", want, describe(n))
		return
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		if lo, hi, ok := intRange(t); ok && isInteger(n.Value) {
			bad(path, "%s is out of range (%s to %s)", n.Value, lo, hi)
			return
		}
		bad(path, "%q is not %s", n.Value, want)
	}
}

// intRange gives the limits of an integer type, as text.
func intRange(t reflect.Type) (lo, hi string, ok bool) {
	switch {
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		bits := t.Bits()
		return strconv.FormatInt(-1<<(bits-1), 10), strconv.FormatInt(1<<(bits-1)-1, 10), true
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return "0", strconv.FormatUint(math.MaxUint64>>(64-t.Bits()), 10), true
	}
	return "", "", false // not an integer type (Bits would panic)
}

// isInteger reports whether s is a whole number of any size.
func isInteger(s string) bool {
	_, ok := new(big.Int).SetString(strings.ReplaceAll(s, "_", ""), 0)
	return ok
}

// yamlFields maps each yaml key of struct t (inline structs included) to
// its field's type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		out[name] = f.Type
	}
	return out
}

// fieldNames lists struct t's yaml keys in declaration order.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported():
		case opts == "inline":
			out = append(out, fieldNames(f.Type)...)
		case name != "" && name != "-":
			out = append(out, name)
		}
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describe names a node's kind for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}
