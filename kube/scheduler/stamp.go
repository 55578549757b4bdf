package scheduler

import (
	"errors"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The annotations of a binding's lease stamp. The API server merges a
// Binding's annotations into the pod it binds, so a bound pod keeps the
// stamp of the term that bound it.
const (
	// StampLeaseAnnotation names the Lease, as namespace/name.
	StampLeaseAnnotation = "schedq.io/lease"
	// StampHolderAnnotation is the lease holder identity the binding was
	// made under.
	StampHolderAnnotation = "schedq.io/lease-holder"
	// StampTransitionsAnnotation is the Lease's leaseTransitions when the
	// binding was made, in decimal.
	StampTransitionsAnnotation = "schedq.io/lease-transitions"
)

// FencedLabel marks a stamped Binding, so that the binding fence's
// policy matches it by its object selector. The policy is matched before
// its parameter (the Lease) is looked up, and a match condition only
// after: selecting by label is what lets every other binding through
// while the Lease does not exist. The API server copies a Binding's
// labels to the pod (PodTopologyLabelsAdmission, on since v1.35), so a
// pod schedq bound keeps it too.
const FencedLabel = "schedq.io/fenced"

// StaleTermMarker is in the message of every refusal by the admission
// policy deploy/schedq.yaml ships (schedq-binding-fence): the binding's
// stamp does not match the Lease as the API server sees it.
const StaleTermMarker = "stale lease term"

// LeaseStamp is the term of leadership a binding is made under: the Lease
// (namespace/name), its holder and its leaseTransitions.
type LeaseStamp struct {
	Lease       string
	Holder      string
	Transitions int32
}

// annotations returns the stamp as the Binding's annotations.
func (s LeaseStamp) annotations() map[string]string {
	return map[string]string{
		StampLeaseAnnotation:       s.Lease,
		StampHolderAnnotation:      s.Holder,
		StampTransitionsAnnotation: strconv.FormatInt(int64(s.Transitions), 10),
	}
}

// labels returns the stamp's label for the Binding: FencedLabel.
func (s LeaseStamp) labels() map[string]string { return map[string]string{FencedLabel: "true"} }

// IsStaleTerm reports whether err is the API server's refusal of a
// binding whose stamp is not the Lease's current term.
func IsStaleTerm(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	return apierrors.IsForbidden(err) && strings.Contains(status.Status().Message, StaleTermMarker)
}
