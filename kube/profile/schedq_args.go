package profile

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// Schedq is the name under which a configuration carries schedq's own
// settings, the ones kube-scheduler has no field for: a pluginConfig
// entry of the first profile (`- name: Schedq` with `args:` SchedqArgs),
// as out-of-tree schedulers carry theirs. Schedq is no plugin that runs:
// enabled at an extension point, it is refused as the file is decoded
// (schedqEnabled), and its framework would fail to build, saying so.
// The settings are the scheduler's, not a profile's, so only the first
// profile may carry them.
const Schedq = "Schedq"

// SchedqArgs are schedq's own settings as a configuration file gives them
// (Schedq's args). Each is nil where the file leaves it to the
// command-line flag that sets it too (named on each field). apiVersion and
// kind may be given (kubescheduler.config.k8s.io/v1, SchedqArgs) or left
// out, as for GPUDevicesArgs.
type SchedqArgs struct {
	// WakeBudget false wakes every pending pod an event may help, as
	// kube-scheduler does (--no-wake-budget); true, the default, only
	// those the event makes room for.
	WakeBudget *bool
	// Fairness shares the queue between namespaces (--fair-namespaces
	// and the flags after it).
	Fairness FairnessArgs
	// FenceMargin is how long before its lease could expire the leader
	// stops binding (--leader-elect-fence-margin); 0: the lease duration
	// less the renew deadline.
	FenceMargin *time.Duration
	// History is how forecasts learn runtimes (--history-label,
	// --history-tail) and where they keep them (--history-file).
	History HistoryArgs
	// StallTimeout is how long a cycle may run before the health checks
	// fail (--stall-timeout); 0: the default.
	StallTimeout *time.Duration
}

// FairnessArgs are SchedqArgs.Fairness.
type FairnessArgs struct {
	// Namespaces turns fair sharing on (--fair-namespaces).
	Namespaces *bool
	// Weights of namespaces, each above 0 and at most 1e9
	// (--fair-namespace-weights); nil: not set.
	Weights map[string]float64
	// HalfLife of a namespace's usage (--fair-half-life); 0: 1m.
	HalfLife *time.Duration
}

// HistoryArgs are SchedqArgs.History.
type HistoryArgs struct {
	// Labels whose values group the runtimes, coarsest first
	// (--history-label); nil: not set.
	Labels []string
	// Tail is longest or exponential (--history-tail).
	Tail *string
	// File keeps the runtimes learnt across restarts (--history-file);
	// empty: none, as the flag's default.
	File *string
}

// HistoryTails are the values of HistoryArgs.Tail.
var HistoryTails = []string{"longest", "exponential"}

// DeepCopyObject copies a.
func (a *SchedqArgs) DeepCopyObject() runtime.Object {
	c := *a
	c.Fairness.Weights = maps.Clone(a.Fairness.Weights)
	c.History.Labels = slices.Clone(a.History.Labels)
	return &c
}

// GetObjectKind: the args carry no kind once decoded.
func (*SchedqArgs) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// schedqFile is SchedqArgs as written, decoded strictly: durations are
// strings, parsed with their paths.
type schedqFile struct {
	APIVersion *string `json:"apiVersion"`
	Kind       *string `json:"kind"`
	WakeBudget *bool   `json:"wakeBudget"`
	Fairness   *struct {
		Namespaces *bool              `json:"namespaces"`
		Weights    map[string]float64 `json:"weights"`
		HalfLife   *string            `json:"halfLife"`
	} `json:"fairness"`
	FenceMargin *string `json:"fenceMargin"`
	History     *struct {
		Labels []string `json:"labels"`
		Tail   *string  `json:"tail"`
		File   *string  `json:"file"`
	} `json:"history"`
	StallTimeout *string `json:"stallTimeout"`
}

// decodeSchedqArgs reads Schedq's args (nil, *runtime.Unknown as
// kube-scheduler's scheme leaves out-of-tree args, or *SchedqArgs),
// strictly, naming each bad field under path. Nil args are empty args.
func decodeSchedqArgs(path *field.Path, obj runtime.Object) (*SchedqArgs, field.ErrorList) {
	switch x := obj.(type) {
	case nil:
		return &SchedqArgs{}, nil
	case *SchedqArgs:
		return x, x.validate(path)
	case *runtime.Unknown:
		raw, errs := rawJSON(path, x)
		if len(errs) > 0 || raw == nil {
			return &SchedqArgs{}, errs
		}
		var f schedqFile
		strict, err := sigsjson.UnmarshalStrict(raw, &f)
		if err != nil {
			// A value of the wrong type leaves its field unset and the
			// rest decoded: they are checked too, so that every problem
			// is named at once (an unknown field's the decoder drops).
			errs = append(errs, jsonError(path, raw, err))
			if !isTypeError(err) {
				return nil, errs
			}
		}
		for _, e := range strict {
			errs = append(errs, strictError(path, e))
		}
		a, more := f.args(path)
		errs = append(append(errs, more...), a.validate(path)...)
		if len(errs) > 0 {
			return nil, errs
		}
		return a, nil
	}
	return nil, field.ErrorList{field.TypeInvalid(path, fmt.Sprintf("%T", obj), "not Schedq's args")}
}

// rawJSON is u's bytes as JSON (nil for none or null).
func rawJSON(path *field.Path, u *runtime.Unknown) ([]byte, field.ErrorList) {
	raw := u.Raw
	switch u.ContentType {
	case runtime.ContentTypeJSON, "":
	case runtime.ContentTypeYAML:
		j, err := sigsyaml.YAMLToJSON(raw)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(path, string(raw), err.Error())}
		}
		raw = j
	default:
		return nil, field.ErrorList{field.Invalid(path, u.ContentType, "content type is not JSON or YAML")}
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return raw, nil
}

// jsonError is a decoding error of raw at its field: a value of the
// wrong type names the field and the type it must have. The decoder's
// type error is of an internal type: its Field (the dotted path), Value
// (what was found) and Type (what was wanted) are read by reflection.
func jsonError(path *field.Path, raw []byte, err error) *field.Error {
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		e := v.Elem()
		fieldPath, got, want := e.FieldByName("Field"), e.FieldByName("Value"), e.FieldByName("Type")
		if fieldPath.Kind() == reflect.String && got.Kind() == reflect.String && want.IsValid() {
			p := path
			if fieldPath.String() != "" {
				p = childPath(path, fieldPath.String())
			}
			what := article(fmt.Sprint(want.Interface()))
			if slices.Contains(durationFields, leaf(fieldPath.String())) {
				what = "a duration (such as 90s or 2m)"
			}
			return field.TypeInvalid(p, got.String(), "must be "+what)
		}
	}
	return field.TypeInvalid(path, string(raw), "must be an object of fields: "+err.Error())
}

// isTypeError reports whether err is the decoder's error of a value of
// the wrong type (one with Field, Value and Type, as jsonError reads),
// after which the decoder goes on with the other fields.
func isTypeError(err error) bool {
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	e := v.Elem()
	return e.FieldByName("Field").Kind() == reflect.String && e.FieldByName("Value").Kind() == reflect.String && e.FieldByName("Type").IsValid()
}

// durationFields are the fields of SchedqArgs that hold durations.
var durationFields = []string{"halfLife", "fenceMargin", "stallTimeout"}

// strictError is an unknown or duplicate field, at its path.
func strictError(path *field.Path, err error) *field.Error {
	msg := err.Error()
	for _, kind := range []string{"unknown field ", "duplicate field "} {
		if name, ok := strings.CutPrefix(msg, kind); ok {
			name = strings.Trim(name, `"`)
			p := childPath(path, name)
			if kind == "duplicate field " {
				return field.Duplicate(p, name)
			}
			return &field.Error{Type: field.ErrorTypeNotFound, Field: p.String(), BadValue: leaf(name),
				Detail: "unknown field: SchedqArgs has " + schedqFields}
		}
	}
	return field.Invalid(path, nil, msg)
}

// schedqFields lists SchedqArgs' fields, for an unknown one's message.
const schedqFields = "apiVersion, kind, wakeBudget, fairness (namespaces, weights, halfLife), fenceMargin, history (labels, tail, file) and stallTimeout"

// childPath is path with the dotted fields of name under it.
func childPath(path *field.Path, name string) *field.Path {
	for part := range strings.SplitSeq(name, ".") {
		path = path.Child(part)
	}
	return path
}

// leaf is the last of dotted fields.
func leaf(name string) string { return name[strings.LastIndex(name, ".")+1:] }

// article is a type's name for a message: bool as "a boolean" and so on.
func article(t string) string {
	switch {
	case t == "bool":
		return "a boolean (true or false)"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "float"), strings.HasPrefix(t, "int"):
		return "a number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a map"
	}
	return "an object of fields"
}

// args checks the apiVersion and kind of f and parses its durations.
func (f *schedqFile) args(path *field.Path) (*SchedqArgs, field.ErrorList) {
	var errs field.ErrorList
	if f.APIVersion != nil && *f.APIVersion != argsAPIVersion {
		errs = append(errs, field.NotSupported(path.Child("apiVersion"), *f.APIVersion, []string{argsAPIVersion}))
	}
	if f.Kind != nil && *f.Kind != "SchedqArgs" {
		errs = append(errs, field.NotSupported(path.Child("kind"), *f.Kind, []string{"SchedqArgs"}))
	}
	dur := func(p *field.Path, s *string) *time.Duration {
		if s == nil {
			return nil
		}
		d, err := time.ParseDuration(*s)
		if err != nil {
			errs = append(errs, field.Invalid(p, *s, "not a duration (such as 90s or 2m)"))
			return nil
		}
		return &d
	}
	a := &SchedqArgs{WakeBudget: f.WakeBudget,
		FenceMargin:  dur(path.Child("fenceMargin"), f.FenceMargin),
		StallTimeout: dur(path.Child("stallTimeout"), f.StallTimeout)}
	if fa := f.Fairness; fa != nil {
		a.Fairness = FairnessArgs{Namespaces: fa.Namespaces, Weights: fa.Weights,
			HalfLife: dur(path.Child("fairness", "halfLife"), fa.HalfLife)}
	}
	if h := f.History; h != nil {
		a.History = HistoryArgs{Labels: h.Labels, Tail: h.Tail, File: h.File}
	}
	return a, errs
}

// validate checks each of a's values on its own, naming its field under
// path; what depends on other settings (the fence margin against the
// lease, weights without fairness) is the program's to check.
func (a *SchedqArgs) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNeg := func(p *field.Path, d *time.Duration) {
		if d != nil && *d < 0 {
			errs = append(errs, field.Invalid(p, d.String(), "must not be negative"))
		}
	}
	nonNeg(path.Child("fenceMargin"), a.FenceMargin)
	nonNeg(path.Child("stallTimeout"), a.StallTimeout)
	fp := path.Child("fairness")
	nonNeg(fp.Child("halfLife"), a.Fairness.HalfLife)
	for _, ns := range slices.Sorted(maps.Keys(a.Fairness.Weights)) {
		p := fp.Child("weights").Key(ns)
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, ns, "not a namespace name: "+msgs[0]))
		}
		if w := a.Fairness.Weights[ns]; !(w > 0) || w > 1e9 {
			errs = append(errs, field.Invalid(p, w, "a weight is a number above 0 (and at most 1e9)"))
		}
	}
	hp := path.Child("history")
	seen := map[string]bool{}
	for i, l := range a.History.Labels {
		if msgs := validation.IsQualifiedName(l); len(msgs) > 0 {
			errs = append(errs, field.Invalid(hp.Child("labels").Index(i), l, "not a label key: "+msgs[0]))
		} else if seen[l] {
			errs = append(errs, field.Duplicate(hp.Child("labels").Index(i), l))
		}
		seen[l] = true
	}
	if t := a.History.Tail; t != nil && !slices.Contains(HistoryTails, *t) {
		errs = append(errs, field.NotSupported(hp.Child("tail"), *t, HistoryTails))
	}
	return errs
}

// schedqPath is the path of the args of a pluginConfig entry.
func schedqPath(profile, entry int) *field.Path {
	return field.NewPath("profiles").Index(profile).Child("pluginConfig").Index(entry).Child("args")
}

// SchedqSettings returns the Schedq args of cfg's first profile, decoded,
// and their field path ("profiles[0].pluginConfig[2].args"); nil and ""
// if it has none. Decode has checked them. O(pluginConfig).
func SchedqSettings(cfg *Config) (*SchedqArgs, string, error) {
	if len(cfg.Profiles) == 0 {
		return nil, "", nil
	}
	for j, pc := range cfg.Profiles[0].PluginConfig {
		if pc.Name != Schedq {
			continue
		}
		a, errs := decodeSchedqArgs(schedqPath(0, j), pc.Args)
		if len(errs) > 0 {
			return nil, "", errs.ToAggregate()
		}
		return a, schedqPath(0, j).String(), nil
	}
	return nil, "", nil
}

// checkSchedqPlace refuses Schedq's args in a profile but the first: they
// are the scheduler's settings, which one profile gives. It also refuses
// an entry whose name is Schedq but for its case ("schedq"): plugin names
// are case-sensitive, and kube-scheduler passes over the args of a name
// it does not know, so the settings would be dropped without a word; and
// Schedq enabled at an extension point of any profile (schedqEnabled).
// O(pluginConfig + enabled plugins).
func checkSchedqPlace(cfg *Config) field.ErrorList {
	var errs field.ErrorList
	for i := range cfg.Profiles {
		for j, pc := range cfg.Profiles[i].PluginConfig {
			if pc.Name != Schedq && strings.EqualFold(pc.Name, Schedq) {
				errs = append(errs, field.NotSupported(field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("name"), pc.Name, []string{Schedq}))
			}
		}
	}
	for i := range cfg.Profiles {
		errs = append(errs, schedqEnabled(field.NewPath("profiles").Index(i).Child("plugins"), cfg.Profiles[i].Plugins)...)
	}
	for i := 1; i < len(cfg.Profiles); i++ {
		for j, pc := range cfg.Profiles[i].PluginConfig {
			if pc.Name == Schedq {
				errs = append(errs, field.Invalid(field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("name"), Schedq,
					"schedq's settings are the scheduler's, not a profile's: give them in the first profile (profiles[0])"))
			}
		}
	}
	return errs
}

// schedqEnabled refuses Schedq enabled at an extension point of plugins
// (at path): it is no plugin that runs, and the framework would fail to
// build only once a program builds it (the simulator, after a --compare's
// first run). Each extension point is a PluginSet field of
// config.Plugins, named in the file by its Go name with a lower-case
// first letter. O(enabled plugins).
func schedqEnabled(path *field.Path, plugins *config.Plugins) field.ErrorList {
	if plugins == nil {
		return nil
	}
	var errs field.ErrorList
	v := reflect.ValueOf(*plugins)
	for k := range v.NumField() {
		set, ok := v.Field(k).Interface().(config.PluginSet)
		if !ok {
			continue
		}
		name := v.Type().Field(k).Name
		point := strings.ToLower(name[:1]) + name[1:]
		for _, p := range set.Enabled {
			if p.Name == Schedq { // no index: defaulting puts kube-scheduler's plugins before the file's
				errs = append(errs, field.Invalid(path.Child(point, "enabled"), Schedq,
					"Schedq is no plugin that runs: it only carries schedq's own settings, in the first profile's pluginConfig; enable it at no extension point"))
			}
		}
	}
	return errs
}
