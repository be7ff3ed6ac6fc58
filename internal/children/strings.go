package children

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// maxSharedStrings bounds the strings the cache shares: the keys of labels
// and annotations, namespaces and the API versions and kinds of owners are
// few in any cluster, so a pool this large holds them all, while a cluster
// with unbounded keys only stops sharing the ones beyond it.
const maxSharedStrings = 4096

// sharedStrings is the one copy of each string that many cached objects
// hold: decoded from the API server, every object has its own copy of its
// namespace, of each label key and of its owner's kind.
var sharedStrings = &stringPool{strings: map[string]string{}}

type stringPool struct {
	mu      sync.Mutex
	strings map[string]string
}

// share returns the pool's copy of s, adding s while the pool has room.
func (p *stringPool) share(s string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if shared, ok := p.strings[s]; ok {
		return shared
	}
	if len(p.strings) < maxSharedStrings {
		p.strings[s] = s
	}
	return s
}

// ShareMetadataStrings, in a cache transform, makes obj's namespace, the
// keys of its labels and annotations and its owners' API versions and kinds
// the copies every other cached object holds: with thousands of objects of
// a few namespaces and label keys, those copies are a good part of the
// metadata's memory. Values are left alone; most are the object's own.
// Typed objects are changed in place; unstructured ones are left as they
// are, since their accessors return copies.
func ShareMetadataStrings(obj metav1.Object) {
	if _, ok := obj.(*unstructured.Unstructured); ok {
		return
	}
	obj.SetNamespace(sharedStrings.share(obj.GetNamespace()))
	shareKeys(obj.GetLabels())
	shareKeys(obj.GetAnnotations())
	owners := obj.GetOwnerReferences()
	for i := range owners {
		owners[i].APIVersion = sharedStrings.share(owners[i].APIVersion)
		owners[i].Kind = sharedStrings.share(owners[i].Kind)
	}
}

// shareKeys replaces the keys of m by their shared copies. An assignment
// to an existing key stores the key given, so the map's own copy is let go.
func shareKeys(m map[string]string) {
	for key, value := range m {
		m[sharedStrings.share(key)] = value
	}
}
