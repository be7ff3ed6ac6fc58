package children

import (
	"encoding/json"
	"testing"
	"unsafe"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Two objects decoded apart hold their own copies of every string; once
// through the cache transform, their namespace, label and annotation keys
// and owners' API version and kind are one copy, and nothing else changed.
func TestCachedChildrenShareTheStringsTheyHaveInCommon(t *testing.T) {
	g := NewWithT(t)
	decode := func(name string) *appsv1.Deployment {
		data, err := json.Marshal(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "team-a",
			Labels:          map[string]string{"app.kubernetes.io/instance": name, "app.kubernetes.io/managed-by": "platform-operator"},
			Annotations:     map[string]string{ConfigHashAnnotation: name + "-hash"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Website", Name: name, UID: types.UID("uid-" + name)}},
		}})
		g.Expect(err).NotTo(HaveOccurred())
		d := &appsv1.Deployment{}
		g.Expect(json.Unmarshal(data, d)).To(Succeed())
		return d
	}
	a, b := decode("site-a"), decode("site-b")
	wantA, wantB := a.DeepCopy(), b.DeepCopy()
	g.Expect(same(a.Namespace, b.Namespace)).To(BeFalse(), "decoded apart, nothing is shared yet")

	for _, d := range []*appsv1.Deployment{a, b} {
		_, err := trimChild(d)
		g.Expect(err).NotTo(HaveOccurred())
	}

	g.Expect(a).To(Equal(wantA))
	g.Expect(b).To(Equal(wantB))
	g.Expect(same(a.Namespace, b.Namespace)).To(BeTrue(), "namespace")
	g.Expect(same(a.OwnerReferences[0].APIVersion, b.OwnerReferences[0].APIVersion)).To(BeTrue(), "owner's API version")
	g.Expect(same(a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind)).To(BeTrue(), "owner's kind")
	for _, m := range []func(*appsv1.Deployment) map[string]string{
		func(d *appsv1.Deployment) map[string]string { return d.Labels },
		func(d *appsv1.Deployment) map[string]string { return d.Annotations },
	} {
		for key := range m(a) {
			g.Expect(same(key, storedKey(m(b), key))).To(BeTrue(), "key %s", key)
		}
	}
}

// same reports whether a and b are one copy in memory.
func same(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// storedKey is the copy of key that m holds.
func storedKey(m map[string]string, key string) string {
	for k := range m {
		if k == key {
			return k
		}
	}
	return ""
}
