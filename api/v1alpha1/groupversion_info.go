// Package v1alpha1 contains the example.com/v1alpha1 API of the platform
// operator: the Tenant kind (a team's namespaces, access and credentials) and
// the BackupJob kind (scheduled backups of a volume, with retention).
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
