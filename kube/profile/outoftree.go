package profile

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	sigsjson "sigs.k8s.io/json"
)

// GPUDevices is the name of schedq's out-of-tree plugin of GPUs as
// devices (the simulator's per-GPU model: fit one GPU at a time, a
// GPU-sharing policy's score, the choice of GPUs at Reserve). Its args are
// GPUDevicesArgs.
const GPUDevices = "GPUDevices"

// GPUDevicesArgs are the args of GPUDevices in a profile's pluginConfig
// (`- name: GPUDevices` with `args: {policy: FGD}`), as
// NodeResourcesFitArgs are NodeResourcesFit's. apiVersion and kind may
// be given (kubescheduler.config.k8s.io/v1, GPUDevicesArgs) or left out,
// as for the in-tree args.
type GPUDevicesArgs struct {
	// Policy is the GPU-sharing policy by which the plugin scores nodes
	// (when it is enabled at score) and chooses the GPUs a pod takes: one
	// of GPUPolicies. Empty: no score, GPUs by best fit.
	Policy string
}

// GPUPolicies are the values of GPUDevicesArgs.Policy, in the order of
// the GPU-sharing paper (Weng et al., USENIX ATC 2023). They are matched
// exactly, as upstream matches its enumerations (scoringStrategy's type).
var GPUPolicies = []string{"Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"}

// argsAPIVersion is the apiVersion args may name: kube-scheduler's.
const argsAPIVersion = "kubescheduler.config.k8s.io/v1"

// DeepCopyObject copies a.
func (a *GPUDevicesArgs) DeepCopyObject() runtime.Object {
	c := *a
	return &c
}

// GetObjectKind: the args carry no kind once decoded.
func (*GPUDevicesArgs) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// argsDecoders are the out-of-tree plugins that take args: each decodes
// and validates a pluginConfig entry's args (nil, *runtime.Unknown as
// kube-scheduler's scheme leaves out-of-tree args, or the typed args),
// naming the fields at path.
var argsDecoders = map[string]func(path *field.Path, obj runtime.Object) (runtime.Object, field.ErrorList){
	GPUDevices: func(path *field.Path, obj runtime.Object) (runtime.Object, field.ErrorList) {
		return decodeGPUDevicesArgs(path, obj)
	},
	Schedq: func(path *field.Path, obj runtime.Object) (runtime.Object, field.ErrorList) {
		return decodeSchedqArgs(path, obj)
	},
}

// OutOfTree is schedq's registry of the plugins it adds to
// kube-scheduler's, by name, so that a configuration may enable, disable,
// weigh and configure them, and Schedq, whose args are schedq's settings
// and which never runs. Their implementations belong to the program
// that runs them: GPUDevices' is the simulator's (its GPUs and the pods'
// GPUs are the simulator's state), given in Setup.Plugins; the factory
// registered here refuses to build the plugin anywhere else. It returns a
// new map on each call.
func OutOfTree() frameworkruntime.Registry {
	return frameworkruntime.Registry{GPUDevices: unavailable(GPUDevices,
		"it models the GPUs of a trace replay: enable it in `schedq simulate --trace` with gpuModel device"),
		Schedq: unavailable(Schedq, "it only carries schedq's own settings, in the first profile's pluginConfig: enable it at no extension point")}
}

// unavailable is the factory of an out-of-tree plugin that this program
// does not implement.
func unavailable(name, why string) frameworkruntime.PluginFactory {
	return func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
		return nil, fmt.Errorf("plugin %s is not available here: %s", name, why)
	}
}

// DecodeGPUDevicesArgs reads GPUDevices' args as a plugin factory is given
// them (nil, *runtime.Unknown or *GPUDevicesArgs), strictly: an unknown
// or duplicate field, a value of the wrong type or an unknown policy is an
// error naming the field under "args". Nil args are empty args.
func DecodeGPUDevicesArgs(obj runtime.Object) (*GPUDevicesArgs, error) {
	a, errs := decodeGPUDevicesArgs(field.NewPath("args"), obj)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return a, nil
}

// decodeGPUDevicesArgs decodes and validates obj, naming fields under
// path. O(size of the args).
func decodeGPUDevicesArgs(path *field.Path, obj runtime.Object) (*GPUDevicesArgs, field.ErrorList) {
	var a GPUDevicesArgs
	switch x := obj.(type) {
	case nil:
		return &a, nil
	case *GPUDevicesArgs:
		a = *x
	case *runtime.Unknown:
		fields, errs := rawFields(path, x)
		if len(errs) > 0 {
			return nil, errs
		}
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			var s string
			if err := sigsjson.UnmarshalCaseSensitivePreserveInts(fields[k], &s); err != nil {
				errs = append(errs, field.TypeInvalid(path.Child(k), string(fields[k]), "must be a string"))
				continue
			}
			switch k {
			case "apiVersion":
				if s != argsAPIVersion {
					errs = append(errs, field.NotSupported(path.Child(k), s, []string{argsAPIVersion}))
				}
			case "kind":
				if s != "GPUDevicesArgs" {
					errs = append(errs, field.NotSupported(path.Child(k), s, []string{"GPUDevicesArgs"}))
				}
			case "policy":
				a.Policy = s
			default:
				errs = append(errs, &field.Error{Type: field.ErrorTypeNotFound, Field: path.Child(k).String(), BadValue: k,
					Detail: "unknown field: GPUDevicesArgs has apiVersion, kind and policy"})
			}
		}
		if len(errs) > 0 {
			return nil, errs
		}
	default:
		return nil, field.ErrorList{field.TypeInvalid(path, fmt.Sprintf("%T", obj), "not GPUDevices' args")}
	}
	if a.Policy != "" && !slices.Contains(GPUPolicies, a.Policy) {
		return nil, field.ErrorList{field.NotSupported(path.Child("policy"), a.Policy, GPUPolicies)}
	}
	return &a, nil
}

// rawFields splits raw args (JSON, or YAML) into their top-level fields,
// refusing duplicates and anything but an object.
func rawFields(path *field.Path, u *runtime.Unknown) (map[string][]byte, field.ErrorList) {
	raw, errs := rawJSON(path, u)
	if len(errs) > 0 || raw == nil {
		return nil, errs
	}
	var fields map[string]json.RawMessage
	strict, err := sigsjson.UnmarshalStrict(raw, &fields)
	if err != nil {
		return nil, field.ErrorList{field.TypeInvalid(path, string(raw), "must be an object of fields: "+err.Error())}
	}
	for _, e := range strict {
		errs = append(errs, field.Invalid(path, string(raw), e.Error()))
	}
	out := make(map[string][]byte, len(fields))
	for k, v := range fields {
		out[k] = v
	}
	return out, errs
}

// checkOutOfTreeArgs decodes and validates the args of schedq's
// out-of-tree plugins in every profile, with their field paths, which
// kube-scheduler's validation leaves to the plugins' factories. O(args).
func checkOutOfTreeArgs(cfg *Config) field.ErrorList {
	var errs field.ErrorList
	for i := range cfg.Profiles {
		for j, pc := range cfg.Profiles[i].PluginConfig {
			dec, ok := argsDecoders[pc.Name]
			if !ok {
				continue
			}
			path := field.NewPath("profiles").Index(i).Child("pluginConfig").Index(j).Child("args")
			if _, e := dec(path, pc.Args); len(e) > 0 {
				errs = append(errs, e...)
			}
		}
	}
	return errs
}
