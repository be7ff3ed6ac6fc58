package website

import (
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/platform"
)

// Labels the operator sets on the children of a Website and on its pods.
const (
	// NameLabel and InstanceLabel select the pods of one Website. They are
	// the Deployment's selector, which is immutable, so their values never
	// change for a given Website.
	NameLabel     = "app.kubernetes.io/name"
	InstanceLabel = "app.kubernetes.io/instance"

	// AppName is the value of NameLabel on every child.
	AppName = "website"
)

// websiteKind is the group, version and kind of the Website, for owner
// references.
var websiteKind = websitev1.GroupVersion.WithKind("Website")

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
	labels[platform.ManagedByLabel] = platform.Name
	return labels
}

// ownerReference makes w the controller of a child, so that the garbage
// collector deletes the child with w, even while the operator is down.
func ownerReference(w *websitev1.Website) *metav1ac.OwnerReferenceApplyConfiguration {
	return children.OwnerReference(w, websiteKind)
}
