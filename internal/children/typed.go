package children

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

// Typed hands a typed object, with its apiVersion and kind set, to Ensure,
// which reads any apply configuration as JSON. Children built around a
// user's typed object (a BackupJob's pod template) or with types client-go
// has no apply configurations for (a VolumeSnapshot) are built typed:
// converting them into apply configurations would be a second, lossy copy
// of the same data.
func Typed(obj runtime.Object) runtime.ApplyConfiguration { return typedApply{obj} }

type typedApply struct{ obj runtime.Object }

// IsApplyConfiguration marks typedApply as an apply configuration.
func (typedApply) IsApplyConfiguration() {}

// MarshalJSON encodes the object without the fields a typed object always
// carries but an apply configuration must not: an empty status and a null
// creation time.
func (t typedApply) MarshalJSON() ([]byte, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
	if err != nil {
		return nil, err
	}
	delete(u, "status")
	if metadata, ok := u["metadata"].(map[string]any); ok {
		delete(metadata, "creationTimestamp")
	}
	return json.Marshal(u)
}
