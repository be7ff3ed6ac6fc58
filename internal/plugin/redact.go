package plugin

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// lastAppliedAnnotation is where client-side kubectl apply keeps the whole
// object it applied: for a Secret, its data in clear.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// redactSecret is s with every value of data and stringData replaced by
// its length, and the last applied configuration dropped: a support
// bundle shows which keys a Secret holds and how big they are, never a
// password.
func redactSecret(s *corev1.Secret) *corev1.Secret {
	out := s.DeepCopy()
	out.Data = nil
	out.StringData = nil
	keys := make([]string, 0, len(s.Data)+len(s.StringData))
	sizes := map[string]int{}
	for k, v := range s.Data {
		keys, sizes[k] = append(keys, k), len(v)
	}
	for k, v := range s.StringData {
		if _, ok := sizes[k]; !ok {
			keys = append(keys, k)
		}
		sizes[k] = len(v)
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		out.StringData = map[string]string{}
		for _, k := range keys {
			out.StringData[k] = fmt.Sprintf("<redacted: %d bytes>", sizes[k])
		}
	}
	if _, ok := out.Annotations[lastAppliedAnnotation]; ok {
		out.Annotations[lastAppliedAnnotation] = "<redacted>"
	}
	out.ManagedFields = nil
	return out
}
