package framework

import (
	"fmt"
	"math"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resource is an amount of each schedulable resource. Every amount is
// between 0 and math.MaxInt64: conversion clamps what does not fit (see
// ConvertResources) and Add saturates, so that no sum ever wraps around.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// Pods is a count of pods (for allocatable: the pod capacity).
	Pods   int64
	Scalar map[v1.ResourceName]int64
}

// The largest quantities that convert to int64 units and milli-units.
var (
	maxUnits      = *resource.NewQuantity(math.MaxInt64, resource.DecimalSI)
	maxMilliUnits = *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)
)

// QuantityError is a resource amount that cannot be accounted in int64:
// one that overflows, or a negative one.
type QuantityError struct {
	Name     v1.ResourceName
	Quantity string
	Problem  string // "overflows int64 milli-units", "overflows int64", "is negative"
}

func (e *QuantityError) Error() string {
	return fmt.Sprintf("%s=%s: %s", e.Name, e.Quantity, e.Problem)
}

// ConvertResources converts a resource list (requests or allocatable) to
// int64 amounts: cpu in milli-units, everything else in units, rounding
// fractions up as Quantity.Value does. It is the one place where schedq
// turns quantities into numbers.
//
// An amount that does not fit in int64 is clamped to math.MaxInt64 and a
// negative one to 0, and each such amount is reported, by resource name,
// in the returned error (a list of *QuantityError, joined with "; ").
// The clamped Resource is still returned: as a request it asks for more
// than any node has, as allocatable it is more than any pod can ask for.
func ConvertResources(rl v1.ResourceList) (Resource, error) {
	var r Resource
	var bad []*QuantityError
	for name, q := range rl {
		v, problem := convert(name, q)
		if problem != "" {
			bad = append(bad, &QuantityError{Name: name, Quantity: q.String(), Problem: problem})
		}
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU = v
		case v1.ResourceMemory:
			r.Memory = v
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage = v
		case v1.ResourcePods:
			r.Pods = v
		default:
			if r.Scalar == nil {
				r.Scalar = map[v1.ResourceName]int64{}
			}
			r.Scalar[name] = v
		}
	}
	return r, joinQuantityErrors(bad)
}

// NewResource is ConvertResources without the report: amounts that do not
// fit are clamped.
func NewResource(rl v1.ResourceList) Resource {
	r, _ := ConvertResources(rl)
	return r
}

// convert turns one quantity into int64 units (milli-units for cpu),
// clamped, with the problem if it had to clamp.
func convert(name v1.ResourceName, q resource.Quantity) (int64, string) {
	if q.Sign() < 0 {
		return 0, "is negative"
	}
	if name == v1.ResourceCPU {
		if q.Cmp(maxMilliUnits) > 0 {
			return math.MaxInt64, "overflows int64 milli-units"
		}
		return q.MilliValue(), ""
	}
	if q.Cmp(maxUnits) > 0 {
		return math.MaxInt64, "overflows int64"
	}
	return q.Value(), ""
}

// joinQuantityErrors orders the problems by resource name, so that the
// message does not depend on map order.
func joinQuantityErrors(bad []*QuantityError) error {
	switch len(bad) {
	case 0:
		return nil
	case 1:
		return bad[0]
	}
	slices.SortFunc(bad, func(a, b *QuantityError) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return quantityErrors(bad)
}

// quantityErrors is more than one QuantityError.
type quantityErrors []*QuantityError

func (e quantityErrors) Error() string {
	parts := make([]string, len(e))
	for i, q := range e {
		parts[i] = q.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap lets errors.As find each QuantityError.
func (e quantityErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, q := range e {
		out[i] = q
	}
	return out
}

// AddSat adds two amounts in [0, MaxInt64], saturating at MaxInt64.
func AddSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Add adds o to r, saturating each amount at math.MaxInt64.
func (r *Resource) Add(o Resource) {
	r.MilliCPU = AddSat(r.MilliCPU, o.MilliCPU)
	r.Memory = AddSat(r.Memory, o.Memory)
	r.EphemeralStorage = AddSat(r.EphemeralStorage, o.EphemeralStorage)
	r.Pods = AddSat(r.Pods, o.Pods)
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] = AddSat(r.Scalar[k], v)
	}
}

// Sub subtracts o from r. It is exact only if no amount of r saturated
// (see Saturated): a saturated sum has lost what it would give back.
func (r *Resource) Sub(o Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.Pods -= o.Pods
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] -= v
	}
}

// Saturated reports whether some amount of r is math.MaxInt64, which a
// saturating sum may have reached by clamping.
func (r *Resource) Saturated() bool {
	if r.MilliCPU == math.MaxInt64 || r.Memory == math.MaxInt64 || r.EphemeralStorage == math.MaxInt64 || r.Pods == math.MaxInt64 {
		return true
	}
	for _, v := range r.Scalar {
		if v == math.MaxInt64 {
			return true
		}
	}
	return false
}
