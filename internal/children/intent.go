package children

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// intent is a desired child in the forms Ensure needs. Most reconciles find
// the child as the operator last verified it and need only the hash and the
// metadata; the whole object is decoded for those that create, compare or
// apply.
type intent struct {
	gvk schema.GroupVersionKind
	key types.NamespacedName
	// hash digests the apply configuration.
	hash string
	// labels and annotations are those the apply configuration sets, the
	// annotations with the hash annotation; owners its owner references.
	labels, annotations map[string]string
	owners              []metav1.OwnerReference
	// data is the apply configuration as JSON.
	data []byte
	// decoded is data as unstructured, with annotations, once unstructured
	// has decoded it.
	decoded *unstructured.Unstructured
}

// intentHeader is what newIntent reads of an apply configuration.
type intentHeader struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string                  `json:"name"`
		Namespace   string                  `json:"namespace"`
		Labels      map[string]string       `json:"labels"`
		Annotations map[string]string       `json:"annotations"`
		Owners      []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
}

func newIntent(desired runtime.ApplyConfiguration) (*intent, error) {
	data, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	var header intentHeader
	if err := json.Unmarshal(data, &header); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	gvk := schema.FromAPIVersionAndKind(header.APIVersion, header.Kind)
	if gvk.Kind == "" || gvk.Version == "" || header.Metadata.Name == "" {
		return nil, errors.New("an apply configuration needs apiVersion, kind and name")
	}
	in := &intent{
		gvk:    gvk,
		key:    types.NamespacedName{Namespace: header.Metadata.Namespace, Name: header.Metadata.Name},
		hash:   hashOf(data),
		labels: header.Metadata.Labels,
		owners: header.Metadata.Owners,
		data:   data,
	}
	in.annotations = header.Metadata.Annotations
	if in.annotations == nil {
		in.annotations = map[string]string{}
	}
	in.annotations[ConfigHashAnnotation] = in.hash
	return in, nil
}

// unstructured is the apply configuration with the annotations of in, as
// the API server receives it. Callers must not change it.
func (in *intent) unstructured() (*unstructured.Unstructured, error) {
	if in.decoded != nil {
		return in.decoded, nil
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(in.data, &u.Object); err != nil {
		return nil, fmt.Errorf("decode desired %s: %w", in.gvk.Kind, err)
	}
	u.SetAnnotations(in.objectAnnotations())
	in.decoded = u
	return u, nil
}

// withoutHashAnnotation makes in describe the apply configuration as given,
// without the annotation Ensure adds.
func (in *intent) withoutHashAnnotation() {
	delete(in.annotations, ConfigHashAnnotation)
	in.decoded = nil
}

// decodeInto fills obj, a typed object, with the desired child, decoded
// from the apply configuration's JSON straight, not through an
// unstructured form, which allocates several times as much.
func (in *intent) decodeInto(obj client.Object) error {
	resetObject(obj)
	if err := json.Unmarshal(in.data, obj); err != nil {
		return fmt.Errorf("decode desired %s: %w", in.gvk.Kind, err)
	}
	obj.SetAnnotations(in.objectAnnotations())
	return nil
}

// objectAnnotations are the annotations of in for an object of its own: a
// copy, or nil rather than an empty map, which would be a field of its own.
func (in *intent) objectAnnotations() map[string]string {
	if len(in.annotations) == 0 {
		return nil
	}
	return maps.Clone(in.annotations)
}

// newObject is the desired child as a new typed object of its kind.
func (in *intent) newObject(scheme *runtime.Scheme) (client.Object, error) {
	obj, err := scheme.New(in.gvk)
	if err != nil {
		return nil, fmt.Errorf("type of %s: %w", in.gvk, err)
	}
	typed, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object type", in.gvk)
	}
	return typed, in.decodeInto(typed)
}
