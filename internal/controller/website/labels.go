package website

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	websitev1 "example.com/platform-operator/api/v1"
)

// Labels and annotations the operator sets on the children of a Website.
const (
	// NameLabel and InstanceLabel select the pods of one Website. They are
	// the Deployment's selector, which is immutable, so their values never
	// change for a given Website.
	NameLabel     = "app.kubernetes.io/name"
	InstanceLabel = "app.kubernetes.io/instance"

	// ManagedByLabel marks every object the operator manages. The operator's
	// cache holds only objects with this label, which keeps it small on
	// clusters with many unrelated Deployments, Services and pods.
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// ConfigHashAnnotation holds the hash of the apply configuration the
	// child was last applied with. When the hash of the desired
	// configuration equals it and the child still carries every desired
	// value, the operator skips the apply, so an idle reconcile writes
	// nothing.
	ConfigHashAnnotation = "example.com/config-hash"
)

const (
	// AppName is the value of NameLabel on every child.
	AppName = "website"

	// ManagerName is the value of ManagedByLabel, and the field manager of
	// every server-side apply the operator makes.
	ManagerName = "platform-operator"
)

// SelectorLabels are the labels that select the pods of w.
func SelectorLabels(w *websitev1.Website) map[string]string {
	return map[string]string{
		NameLabel:     AppName,
		InstanceLabel: w.Name,
	}
}

// Labels are the labels of every child of w and of its pods.
func Labels(w *websitev1.Website) map[string]string {
	labels := SelectorLabels(w)
	labels[ManagedByLabel] = ManagerName
	return labels
}

// ownerReference makes w the controller of a child, so that the garbage
// collector deletes the child with w, even while the operator is down, and
// so that no other controller adopts it.
func ownerReference(w *websitev1.Website) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(websitev1.GroupVersion.String()).
		WithKind("Website").
		WithName(w.Name).
		WithUID(w.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// configHash is a stable digest of an apply configuration. Apply
// configurations marshal deterministically: struct fields in declaration
// order, map keys sorted.
func configHash(config any) string {
	data, err := json.Marshal(config)
	if err != nil {
		// Apply configurations are plain data; failing to marshal one is a
		// programming error, not a runtime condition.
		panic(fmt.Sprintf("marshal apply configuration: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}
