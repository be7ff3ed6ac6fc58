package localcluster_test

import (
	gocontext "context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/localcluster"
)

// The simulation parts, on one cluster: claims of the class "local" bind,
// also restores from a snapshot; Jobs that mount them complete, or fail when
// their pod is annotated so; snapshots become ready, or fail when annotated
// so, or wait while their claim is held.
func TestSimulationParts(t *testing.T) {
	g := NewWithT(t)
	cluster, _ := startCluster(t, localcluster.Options{Simulations: true})
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(snapshotv1.AddToScheme(scheme))
	c, err := client.New(cluster.RESTConfig(), client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := t.Context()
	const ns = "default"

	// A claim without a class gets the default, "local", and binds.
	g.Expect(c.Create(ctx, claim("data", nil))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, got)).To(Succeed())
		g.Expect(got.Spec.StorageClassName).To(Equal(ptr.To(localcluster.SimulationStorageClass)))
		g.Expect(got.Status.Phase).To(Equal(corev1.ClaimBound))
		g.Expect(got.Status.Capacity.Storage().String()).To(Equal("1Gi"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// A Job that mounts it completes; one whose pod is annotated fails.
	g.Expect(c.Create(ctx, job("copy", false))).To(Succeed())
	g.Expect(c.Create(ctx, job("broken", true))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(jobCondition(ctx, g, c, "copy")).To(Equal(batchv1.JobComplete))
		g.Expect(jobCondition(ctx, g, c, "broken")).To(Equal(batchv1.JobFailed))
	}).WithTimeout(60 * time.Second).Should(Succeed())

	// A snapshot waits while its claim is held, and one annotated fails;
	// once the hold is removed, the snapshot becomes ready with a content
	// and the claim's size; a claim restored from it binds.
	data := &corev1.PersistentVolumeClaim{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, data)).To(Succeed())
	held := data.DeepCopy()
	metav1.SetMetaDataAnnotation(&held.ObjectMeta, localcluster.SimulationHoldAnnotation, "true")
	g.Expect(c.Patch(ctx, held, client.MergeFrom(data))).To(Succeed())
	g.Expect(c.Create(ctx, snapshot("snap", false))).To(Succeed())
	g.Expect(c.Create(ctx, snapshot("snap-broken", true))).To(Succeed())
	g.Eventually(func(g Gomega) {
		broken := &snapshotv1.VolumeSnapshot{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap-broken"}, broken)).To(Succeed())
		g.Expect(broken.Status).NotTo(BeNil())
		g.Expect(broken.Status.Error).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	// The round that failed snap-broken saw snap too.
	waiting := &snapshotv1.VolumeSnapshot{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap"}, waiting)).To(Succeed())
	g.Expect(waiting.Status).To(BeNil(), "the snapshot of a held claim waits")
	released := held.DeepCopy()
	delete(released.Annotations, localcluster.SimulationHoldAnnotation)
	g.Expect(c.Patch(ctx, released, client.MergeFrom(held))).To(Succeed())
	g.Eventually(func(g Gomega) {
		s := &snapshotv1.VolumeSnapshot{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "snap"}, s)).To(Succeed())
		g.Expect(s.Status).NotTo(BeNil())
		g.Expect(s.Status.ReadyToUse).To(Equal(ptr.To(true)))
		g.Expect(s.Status.RestoreSize.String()).To(Equal("1Gi"))
		g.Expect(s.Status.BoundVolumeSnapshotContentName).NotTo(BeNil())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	restore := claim("restored", &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: "snap"})
	g.Expect(c.Create(ctx, restore)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &corev1.PersistentVolumeClaim{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "restored"}, got)).To(Succeed())
		g.Expect(got.Spec.DataSource).NotTo(BeNil(), "the API server kept the dataSource")
		g.Expect(got.Status.Phase).To(Equal(corev1.ClaimBound))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// Deleting the snapshot deletes its content; deleting a claim, its
	// volume.
	g.Expect(c.Delete(ctx, &snapshotv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"}})).To(Succeed())
	g.Expect(c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "restored"}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		contents := &snapshotv1.VolumeSnapshotContentList{}
		g.Expect(c.List(ctx, contents)).To(Succeed())
		g.Expect(contents.Items).To(BeEmpty())
		volumes := &corev1.PersistentVolumeList{}
		g.Expect(c.List(ctx, volumes)).To(Succeed())
		g.Expect(volumes.Items).To(HaveLen(1), "only the volume of the claim data is left")
	}).WithTimeout(60 * time.Second).Should(Succeed())
}

func claim(name string, dataSource *corev1.TypedLocalObjectReference) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			DataSource:  dataSource,
		},
	}
}

func job(name string, fail bool) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "copy", Image: "busybox:1.36", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data", ReadOnly: true}}}},
			}},
		},
	}
	if fail {
		j.Spec.Template.Annotations = map[string]string{localcluster.SimulationFailAnnotation: "true"}
	}
	return j
}

func jobCondition(ctx gocontext.Context, g Gomega, c client.Client, name string) batchv1.JobConditionType {
	j := &batchv1.Job{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, j)).To(Succeed())
	for _, cond := range j.Status.Conditions {
		if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
			return cond.Type
		}
	}
	return ""
}

func snapshot(name string, fail bool) *snapshotv1.VolumeSnapshot {
	s := &snapshotv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       snapshotv1.VolumeSnapshotSpec{Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}},
	}
	if fail {
		s.Annotations = map[string]string{localcluster.SimulationFailAnnotation: "true"}
	}
	return s
}

// The embedded VolumeSnapshot CRDs are those of the external-snapshotter
// client module that go.mod requires, whose Go types the operator uses.
func TestSimulationCRDsMatchTheModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubernetes-csi/external-snapshotter/client/v8").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd")
	entries, err := os.ReadDir("simulation_crds")
	if err != nil || len(entries) != 3 {
		t.Fatalf("simulation_crds: %v, %d files", err, len(entries))
	}
	for _, e := range entries {
		ours, err := os.ReadFile(filepath.Join("simulation_crds", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if string(ours) != string(theirs) {
			t.Errorf("%s differs from the module's: run go generate ./internal/localcluster", e.Name())
		}
	}
}
