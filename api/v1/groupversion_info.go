// Package v1 contains the example.com/v1 API of the platform operator: the
// Website kind, which turns a container image into a running, reachable web
// service.
//
// +kubebuilder:object:generate=true
// +groupName=example.com
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API, the tutorial's
	// example.com/v1.
	GroupVersion = schema.GroupVersion{Group: "example.com", Version: "v1"}

	// SchemeBuilder registers the types of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
