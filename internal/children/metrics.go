package children

import (
	"bytes"
	"io"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// childWrites counts what the operator writes to children, by the kind of
// their owner, their own kind and the operation: create, update (the
// owner's spec changed), repair (someone changed the child), replace (a
// repair that had to drop someone else's fields), adopt and delete, and
// the writes controllers make beside the Manager (CountWrite).
var childWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "platform_operator_child_writes_total",
	Help: "Writes to owned children, by owner kind, child kind and operation (create, update, repair, replace, adopt, delete, and a controller's own such as issue or release).",
}, []string{"owner_kind", "child_kind", "operation"})

// childReads counts the reads of children from the API server, past the
// cache, by the kind of their owner, their own kind and the reason:
// compare (the cache keeps a partial copy, and the child must be compared
// with its desired state), conflict (a create found the name taken by an
// object the cache does not have) and adopt (an object not the owner's is
// labelled for adoption, which is decided on the object as the API server
// has it).
var childReads = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "platform_operator_child_reads_total",
	Help: "Reads of owned children from the API server past the cache, by owner kind, child kind and reason (compare, conflict, adopt).",
}, []string{"owner_kind", "child_kind", "reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(childWrites, childReads)
}

func countRead(ownerKind, childKind, reason string) {
	childReads.WithLabelValues(ownerKind, childKind, reason).Inc()
}

func countWrite(ownerKind, childKind, operation string) {
	childWrites.WithLabelValues(ownerKind, childKind, operation).Inc()
}

// CountWrite counts a write to a child that a controller makes itself,
// beside the Manager (a token written into a Secret, a namespace released),
// so that platform_operator_child_writes_total holds every child write.
func CountWrite(ownerKind, childKind, operation string) {
	countWrite(ownerKind, childKind, operation)
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
