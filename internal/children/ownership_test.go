package children

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"example.com/platform-operator/internal/platform"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource string, fields ...string) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, APIVersion: "apps/v1", FieldsType: "FieldsV1"}
	if fields != nil {
		set := &fieldpath.Set{}
		for _, f := range fields {
			set.Insert(fieldpath.MakePathOrDie("spec", f))
		}
		data, err := set.ToJSON()
		if err != nil {
			panic(err)
		}
		e.FieldsV1 = &metav1.FieldsV1{Raw: data}
	}
	return e
}

// ownershipCases are managed fields and whether the operator's ownership
// in them needs an upgrade.
var ownershipCases = []struct {
	name    string
	entries []metav1.ManagedFieldsEntry
	want    bool
}{
	{"made by a create", []metav1.ManagedFieldsEntry{entry(platform.Name, metav1.ManagedFieldsOperationUpdate, "", "replicas")}, true},
	{"applied", []metav1.ManagedFieldsEntry{entry(platform.Name, metav1.ManagedFieldsOperationApply, "", "replicas")}, false},
	{"applied, status by the Deployment controller", []metav1.ManagedFieldsEntry{
		entry(platform.Name, metav1.ManagedFieldsOperationApply, ""),
		entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status")}, false},
	{"made by a create, status by the Deployment controller", []metav1.ManagedFieldsEntry{
		entry(platform.Name, metav1.ManagedFieldsOperationUpdate, ""),
		entry("kube-controller-manager", metav1.ManagedFieldsOperationUpdate, "status")}, true},
	{"status written by the operator", []metav1.ManagedFieldsEntry{
		entry(platform.Name, metav1.ManagedFieldsOperationApply, ""),
		entry(platform.Name, metav1.ManagedFieldsOperationUpdate, "status")}, false},
	{"edited by hand: someone else's, no concern of ours", []metav1.ManagedFieldsEntry{
		entry(platform.Name, metav1.ManagedFieldsOperationApply, ""),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "")}, false},
	{"applied under the former name", []metav1.ManagedFieldsEntry{entry(platform.LegacyName, metav1.ManagedFieldsOperationApply, "")}, true},
	{"made by a create under the former name", []metav1.ManagedFieldsEntry{entry(platform.LegacyName, metav1.ManagedFieldsOperationUpdate, "")}, true},
}

func TestNeedsOwnershipUpgrade(t *testing.T) {
	tests := ownershipCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: tt.entries}}
			NewWithT(t).Expect(needsOwnershipUpgrade(d)).To(Equal(tt.want))
		})
	}
}

// The fields applied under the operator's former name become the current
// name's, united with what it applied since, so that the operator can
// remove them later.
func TestRenameLegacyApplier(t *testing.T) {
	g := NewWithT(t)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		entry(platform.LegacyName, metav1.ManagedFieldsOperationApply, "", "replicas", "paused"),
		entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", "minReadySeconds"),
	}}}
	g.Expect(renameLegacyApplier(d)).To(Succeed())
	g.Expect(d.ManagedFields).To(HaveLen(2))
	g.Expect(d.ManagedFields[0].Manager).To(Equal(platform.Name))
	g.Expect(d.ManagedFields[1].Manager).To(Equal("kubectl-edit"), "other managers are left alone")

	both := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		entry(platform.Name, metav1.ManagedFieldsOperationApply, "", "replicas"),
		entry(platform.LegacyName, metav1.ManagedFieldsOperationApply, "", "paused"),
	}}}
	g.Expect(renameLegacyApplier(both)).To(Succeed())
	g.Expect(both.ManagedFields).To(HaveLen(1))
	set, err := decodeFields(both.ManagedFields[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Has(fieldpath.MakePathOrDie("spec", "replicas"))).To(BeTrue())
	g.Expect(set.Has(fieldpath.MakePathOrDie("spec", "paused"))).To(BeTrue())
}

func TestSpecFieldsLeavesMetadataAlone(t *testing.T) {
	g := NewWithT(t)
	set := &fieldpath.Set{}
	set.Insert(fieldpath.MakePathOrDie("spec", "ports"))
	set.Insert(fieldpath.MakePathOrDie("metadata", "annotations", "team"))
	spec := specFields(set)
	g.Expect(spec.Has(fieldpath.MakePathOrDie("spec", "ports"))).To(BeTrue())
	g.Expect(spec.Has(fieldpath.MakePathOrDie("metadata", "annotations", "team"))).To(BeFalse(), "a person's annotation survives a replacement")
}

// The cache keeps of managed fields only what tells whether the operator's
// ownership needs an upgrade, and tells it the same.
func TestTrimManagedFieldsKeepsWhatTellsAnUpgradeIsNeeded(t *testing.T) {
	for _, tt := range ownershipCases {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: tt.entries}}
			out, err := TrimManagedFields(d.DeepCopy())
			g.Expect(err).NotTo(HaveOccurred())
			trimmed := out.(*appsv1.Deployment)
			g.Expect(needsOwnershipUpgrade(trimmed)).To(Equal(tt.want))
			for _, e := range trimmed.ManagedFields {
				g.Expect(e.FieldsV1).To(BeNil(), "no field sets")
				g.Expect(e.Manager).To(BeElementOf(platform.Name, platform.LegacyName), "only the operator's entries")
			}
			if !tt.want {
				// At most the operator's own apply, which tells that it
				// made the object (untouchedSinceCreated).
				g.Expect(trimmed.ManagedFields).To(HaveEach(metav1.ManagedFieldsEntry{Manager: platform.Name, Operation: metav1.ManagedFieldsOperationApply}))
			}
		})
	}
}

func TestManagedSelectorTakesTheFormerNameToo(t *testing.T) {
	g := NewWithT(t)
	selector := ManagedSelector()
	for _, name := range []string{platform.Name, platform.LegacyName} {
		g.Expect(selector.Matches(labelSet{platform.ManagedByLabel: name})).To(BeTrue(), name)
	}
	g.Expect(selector.Matches(labelSet{platform.ManagedByLabel: "helm"})).To(BeFalse())
	g.Expect(selector.Matches(labelSet{})).To(BeFalse())
}
