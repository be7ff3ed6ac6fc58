package children

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Creations gathers the children one reconcile creates, for a single event
// that names them all: an owner that makes many children at once (a
// Tenant's namespaces, bindings and ServiceAccount) then costs the API
// server one event instead of one per child, and the event still says what
// was made.
type Creations struct {
	names []string
}

// CreatedInto makes Ensure report the child's creation in c instead of in
// an event of its own; RecordCreated then emits the event.
func CreatedInto(c *Creations) EnsureOption {
	return func(o *ensureOptions) { o.created = c }
}

func (c *Creations) add(kind string, key types.NamespacedName) {
	name := kind + " " + key.Name
	if key.Namespace != "" {
		name += " in " + key.Namespace
	}
	c.names = append(c.names, name)
}

// maxEventNote is the longest note the events API accepts.
const maxEventNote = 1024

// RecordCreated emits one Normal event on owner, reason ChildrenCreated,
// naming every child created into c; none when c is empty.
func (m *Manager) RecordCreated(owner runtime.Object, c *Creations) {
	if len(c.names) == 0 {
		return
	}
	note := "Created " + strings.Join(c.names, ", ")
	if len(note) > maxEventNote {
		note = note[:maxEventNote-len(" …")] + " …"
	}
	m.recorder.Eventf(owner, nil, corev1.EventTypeNormal, "ChildrenCreated", "Create", "%s", note)
}
