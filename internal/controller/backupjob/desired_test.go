package backupjob

import (
	"encoding/json"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

func testBackupJob() *v1alpha1.BackupJob {
	return &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "team", UID: "uid-1"},
		Spec: v1alpha1.BackupJobSpec{
			Schedule: "@daily",
			Source:   v1alpha1.BackupSource{PersistentVolumeClaimName: "data"},
			JobTemplate: &v1alpha1.BackupJobTemplate{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
				Spec: batchv1.JobSpec{
					TTLSecondsAfterFinished: ptr.To(int32(10)),
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"simulation.example.com/fail": "true"}},
						Spec: corev1.PodSpec{
							InitContainers: []corev1.Container{{Name: "prepare", Image: "busybox:1.36"}},
							Containers:     []corev1.Container{{Name: "copy", Image: "busybox:1.36"}},
						},
					},
				},
			},
		},
	}
}

func testSource(size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "team"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

var testRun = run{name: "nightly-1700000000", scheduled: time.Unix(1700000000, 0), runNow: "now please"}

// A run's Job: the template with the source read-only at /source and the
// new claim at /backup in every container, the run's labels on the Job and
// its pods, the BackupJob as controller, no TTL, a deadline, and a pod that
// meets the restricted Pod Security Standard.
func TestDesiredRunJob(t *testing.T) {
	job := desiredRunJob(testBackupJob(), testRun)
	if job.Name != testRun.name || job.Namespace != "team" {
		t.Errorf("name %s/%s", job.Namespace, job.Name)
	}
	for _, labels := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
		if labels[v1alpha1.BackupJobLabel] != "nightly" || labels[RunLabel] != testRun.name {
			t.Errorf("labels %v lack the run's", labels)
		}
	}
	if job.Labels["team"] != "a" || job.Spec.Template.Annotations["simulation.example.com/fail"] != "true" {
		t.Error("the template's own labels and annotations are lost")
	}
	if job.Annotations[ScheduledTimeAnnotation] != "2023-11-14T22:13:20Z" || job.Annotations[RunNowAnnotation] != "now please" {
		t.Errorf("annotations %v", job.Annotations)
	}
	if len(job.OwnerReferences) != 1 || !ptr.Deref(job.OwnerReferences[0].Controller, false) || job.OwnerReferences[0].UID != "uid-1" {
		t.Errorf("owner references %v", job.OwnerReferences)
	}
	if job.Spec.TTLSecondsAfterFinished != nil || job.Spec.ActiveDeadlineSeconds == nil {
		t.Error("TTL must be dropped and a deadline set")
	}
	pod := job.Spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q", pod.RestartPolicy)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if v := volumes["source"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "data" || !v.PersistentVolumeClaim.ReadOnly {
		t.Errorf("source volume %+v", v)
	}
	if v := volumes["backup"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != testRun.name || v.PersistentVolumeClaim.ReadOnly {
		t.Errorf("backup volume %+v", v)
	}
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		mounts := map[string]corev1.VolumeMount{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m
		}
		if !mounts[SourcePath].ReadOnly || mounts[SourcePath].Name != "source" || mounts[BackupPath].Name != "backup" || mounts[BackupPath].ReadOnly {
			t.Errorf("container %s mounts %v", c.Name, c.VolumeMounts)
		}
	}
	if problems := restrictedViolations(t, &job.Spec.Template); len(problems) > 0 {
		t.Errorf("violates the restricted Pod Security Standard: %v", problems)
	}
}

// What the template sets is kept; only what it leaves unset is defaulted.
func TestRestrictPodKeepsTheTemplatesChoices(t *testing.T) {
	bj := testBackupJob()
	bj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To(int64(1000))}
	pod := desiredRunJob(bj, testRun).Spec.Template.Spec
	if pod.SecurityContext.RunAsUser != nil {
		t.Error("a user set on a container must not be overridden by a pod-level default")
	}
	if *pod.Containers[0].SecurityContext.RunAsUser != 1000 {
		t.Error("the container's user was changed")
	}
	// The check must be able to fail: a privileged pod does.
	privileged := desiredRunJob(testBackupJob(), testRun).Spec.Template
	privileged.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
	if len(restrictedViolations(t, &privileged)) == 0 {
		t.Error("a privileged pod passed the restricted check")
	}
}

func restrictedViolations(t *testing.T, template *corev1.PodTemplateSpec) []string {
	t.Helper()
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, result := range evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()},
		&template.ObjectMeta, &template.Spec) {
		if !result.Allowed {
			problems = append(problems, result.ForbiddenReason+": "+result.ForbiddenDetail)
		}
	}
	return problems
}

// A run's claim: the target's size and class, or the source's size and the
// default class; the source's access modes; labels and no owner.
func TestDesiredBackupClaim(t *testing.T) {
	tests := map[string]struct {
		target    *v1alpha1.BackupTarget
		wantSize  string
		wantClass *string
	}{
		"source size, default class": {target: nil, wantSize: "5Gi"},
		"target size and class": {
			target:   &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{StorageClassName: "cheap", Size: ptr.To(resource.MustParse("20Gi"))}},
			wantSize: "20Gi", wantClass: ptr.To("cheap"),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			bj := testBackupJob()
			bj.Spec.Target = tt.target
			claim := desiredBackupClaim(bj, testRun, testSource("5Gi"))
			if got := claim.Spec.Resources.Requests.Storage().String(); got != tt.wantSize {
				t.Errorf("size %s, want %s", got, tt.wantSize)
			}
			if ptr.Deref(claim.Spec.StorageClassName, "") != ptr.Deref(tt.wantClass, "") {
				t.Errorf("class %v, want %v", claim.Spec.StorageClassName, tt.wantClass)
			}
			if len(claim.OwnerReferences) != 0 {
				t.Error("a backup must not have an owner reference")
			}
			if claim.Labels[v1alpha1.BackupJobLabel] != "nightly" || claim.Labels[RunLabel] != testRun.name {
				t.Errorf("labels %v", claim.Labels)
			}
			if len(claim.Spec.AccessModes) != 1 || claim.Spec.AccessModes[0] != corev1.ReadWriteMany {
				t.Errorf("access modes %v", claim.Spec.AccessModes)
			}
		})
	}
}

// A drill's claim is restored from the backup, a clone of a claim or a
// restore of a snapshot, and is owned by the BackupJob.
func TestDesiredDrillClaim(t *testing.T) {
	bj := testBackupJob()
	for _, kind := range []v1alpha1.BackupKind{v1alpha1.VolumeBackup, v1alpha1.SnapshotBackup} {
		b := &backup{name: testRun.name, kind: kind, scheduled: testRun.scheduled, size: ptr.To(resource.MustParse("3Gi"))}
		claim := desiredDrillClaim(bj, b)
		if claim.Name != DrillName("nightly", testRun.scheduled) || claim.Labels[DrillLabel] != testRun.name {
			t.Errorf("%s: name %s labels %v", kind, claim.Name, claim.Labels)
		}
		ds := claim.Spec.DataSource
		wantKind := map[v1alpha1.BackupKind]string{v1alpha1.VolumeBackup: "PersistentVolumeClaim", v1alpha1.SnapshotBackup: "VolumeSnapshot"}[kind]
		if ds == nil || ds.Kind != wantKind || ds.Name != testRun.name {
			t.Errorf("%s: dataSource %+v", kind, ds)
		}
		if claim.Spec.Resources.Requests.Storage().String() != "3Gi" || len(claim.OwnerReferences) != 1 {
			t.Errorf("%s: %+v", kind, claim.Spec)
		}
	}
}

// Every Nth successful backup is drilled: the newest one, once N have been
// made since the newest checked one.
func TestDrillCandidate(t *testing.T) {
	ok, failed := v1alpha1.BackupSucceeded, v1alpha1.BackupFailed
	mk := func(result v1alpha1.BackupResult, verified v1alpha1.VerificationResult) *backup {
		return &backup{result: result, verified: verified, object: &corev1.PersistentVolumeClaim{}}
	}
	tests := map[string]struct {
		backups []*backup // newest first
		n       int32
		want    int // index, or -1
	}{
		"none":                            {backups: nil, n: 1, want: -1},
		"every one, newest unchecked":     {backups: []*backup{mk(ok, ""), mk(ok, "Passed")}, n: 1, want: 0},
		"every one, newest checked":       {backups: []*backup{mk(ok, "Failed"), mk(ok, "")}, n: 1, want: -1},
		"failed runs do not count":        {backups: []*backup{mk(failed, ""), mk(ok, ""), mk(ok, "Passed")}, n: 2, want: -1},
		"every second, two since checked": {backups: []*backup{mk(failed, ""), mk(ok, ""), mk(ok, ""), mk(ok, "Passed")}, n: 2, want: 1},
		"newer than a running drill":      {backups: []*backup{mk(ok, ""), mk(ok, "Running")}, n: 1, want: 0},
		"an object-store backup is checked too": {backups: []*backup{
			{result: ok, kind: v1alpha1.ObjectStoreBackup, object: &corev1.ConfigMap{}}, mk(ok, "Passed")}, n: 1, want: 0},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := drillCandidate(tt.backups, tt.n)
			var want *backup
			if tt.want >= 0 {
				want = tt.backups[tt.want]
			}
			if got != want {
				t.Errorf("got %p, want %p", got, want)
			}
		})
	}
}

// Each child, as the API server stores it from its builder, matches its
// desired state: a restarted operator, which compares every child once,
// finds nothing to put back.
func TestChildrenAsBuiltShowNoDrift(t *testing.T) {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(AddToScheme(scheme))
	bj := testBackupJob()
	bj.Spec.Target = &v1alpha1.BackupTarget{Volume: &v1alpha1.BackupVolumeTarget{StorageClassName: "cheap", Size: ptr.To(resource.MustParse("20Gi"))}}
	bj.Spec.Verify = &v1alpha1.BackupVerify{EveryNth: 2, JobTemplate: bj.Spec.JobTemplate.DeepCopy()}
	volume := &backup{name: testRun.name, kind: v1alpha1.VolumeBackup, scheduled: testRun.scheduled, size: ptr.To(resource.MustParse("3Gi"))}
	snapshot := &backup{name: testRun.name, kind: v1alpha1.SnapshotBackup, scheduled: testRun.scheduled, size: ptr.To(resource.MustParse("3Gi"))}
	for name, desired := range map[string]client.Object{
		"run's Job":                 desiredRunJob(bj, testRun),
		"run's claim":               desiredBackupClaim(bj, testRun, testSource("5Gi")),
		"run's snapshot":            desiredSnapshot(bj, testRun),
		"drill's claim of volume":   desiredDrillClaim(bj, volume),
		"drill's claim of snapshot": desiredDrillClaim(bj, snapshot),
		"drill's Job":               desiredDrillJob(bj, volume),
	} {
		data, err := json.Marshal(children.Typed(desired))
		if err != nil {
			t.Fatal(err)
		}
		live := desired.DeepCopyObject().(client.Object)
		if err := json.Unmarshal(data, live); err != nil {
			t.Fatal(err)
		}
		live.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as read from the cache
		drift, err := children.Drift(scheme, children.Typed(desired), live)
		if err != nil || len(drift) > 0 {
			t.Errorf("%s: drift %v, error %v", name, drift, err)
		}
	}
}
