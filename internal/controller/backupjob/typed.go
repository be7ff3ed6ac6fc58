package backupjob

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/runtime"
)

// typedApply hands a typed object, with its apiVersion and kind set, to
// children.Ensure, which reads any apply configuration as JSON. The
// BackupJob's children are built around the user's pod template, a typed
// JobTemplateSpec: converting it into client-go's apply configurations
// would be a second, lossy copy of the same data.
type typedApply struct{ obj runtime.Object }

var _ runtime.ApplyConfiguration = typedApply{}

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
