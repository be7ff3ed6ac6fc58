package pgspec

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/podsecurity"
)

func TestOrdinal(t *testing.T) {
	for name, want := range map[string]int{"db-1": 1, "db-9": 9, "db-10": 0, "db-0": 0, "db-x": 0, "db": 0, "other-2": 0} {
		if got := Ordinal("db", name); got != want {
			t.Errorf("Ordinal(db, %s) = %d, want %d", name, got, want)
		}
	}
	if got := Ordinal("db", InstanceName("db", 3)); got != 3 {
		t.Errorf("Ordinal of InstanceName(db, 3) = %d", got)
	}
}

func TestMostCaughtUp(t *testing.T) {
	g := NewWithT(t)
	g.Expect(MostCaughtUp(nil)).To(BeEmpty())
	g.Expect(MostCaughtUp([]v1alpha1.PostgresInstanceStatus{
		{Name: "db-3", ReceivedLSN: "0/300", ReplayedLSN: "0/100"},
		{Name: "db-2", ReceivedLSN: "0/300", ReplayedLSN: "0/200"},
		{Name: "db-4", ReceivedLSN: "0/300", ReplayedLSN: "0/200"},
		{Name: "db-1", ReceivedLSN: "not a position", ReplayedLSN: "1/0"},
	})).To(Equal("db-2"), "most received, then most replayed, then the lowest name")
}

// Every tool Job's pod is laid out as an instance's and meets the
// restricted Pod Security Standard.
func TestToolJob(t *testing.T) {
	g := NewWithT(t)
	spec := ToolJob{Tool: ToolVerify, Image: "postgres:15", OperatorImage: "operator:v1", Args: []string{"verify"}}.Spec()
	pod := spec.Template
	g.Expect(pod.Labels).To(HaveKeyWithValue(ToolLabel, "pg-verify"))
	g.Expect(pod.Spec.Containers[0].Name).To(Equal("pg-verify"), "the container the label names")
	g.Expect(pod.Spec.Containers[0].Command).To(Equal([]string{ManagerPath, "instance", "verify"}))
	g.Expect(pod.Spec.InitContainers).To(Equal([]corev1.Container{InstallContainerOf("operator:v1")}))
	g.Expect(pod.Spec.Volumes).To(Equal([]corev1.Volume{ToolsVolumeOf()}))
	g.Expect(podsecurity.Restricted(podsecurity.VersionOf("v1.37.2"), &pod.ObjectMeta, &pod.Spec)).To(BeEmpty())
}
