package backupjob

import (
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
)

// The builders of this file are pure: from a BackupJob and what a run
// needs, the object to create. They return typed objects, which read and
// test more plainly than apply configurations for objects built around a
// user's pod template; children.Typed hands them to children.Ensure.

const (
	// sourceVolume and backupVolume are the volumes the operator adds to a
	// run's pod; the CRD refuses templates that name their own so.
	sourceVolume = "source"
	backupVolume = "backup"
	// SourcePath and BackupPath are where a run's containers find the
	// source and the run's new volume, and a drill's the restored copy.
	SourcePath = "/source"
	BackupPath = "/backup"

	// defaultActiveDeadline bounds a run or drill whose template sets no
	// activeDeadlineSeconds: a Job stuck pending (a claim that never binds,
	// an image that cannot be pulled) fails after it instead of holding
	// the schedule under Forbid for ever.
	defaultActiveDeadline = 6 * time.Hour

	// nonRootID is the user, group and fsGroup of a run's pod when its
	// template names no user: the restricted Pod Security Standard forbids
	// root, and fsGroup makes the new volume writable for that user.
	nonRootID int64 = 65532
)

// run identifies one run of a BackupJob: the name of its objects, the time
// it was scheduled for and, for a run that spec.runNow asked for, that
// value.
type run struct {
	name      string
	scheduled time.Time
	runNow    string
}

func newRun(backupJob string, scheduled time.Time, runNow string) run {
	return run{name: RunName(backupJob, scheduled), scheduled: scheduled, runNow: runNow}
}

func runAnnotations(r run) map[string]string {
	a := map[string]string{ScheduledTimeAnnotation: r.scheduled.UTC().Format(time.RFC3339)}
	if r.runNow != "" {
		a[RunNowAnnotation] = r.runNow
	}
	return a
}

// backupAnnotations are the annotations of a run's backup: the run's, and
// which BackupJob made it.
func backupAnnotations(bj *v1alpha1.BackupJob, r run) map[string]string {
	a := runAnnotations(r)
	a[MadeByAnnotation] = string(bj.UID)
	return a
}

// desiredBackupClaim is the new claim of a run with a volume target: the
// size of spec.target.volume, or else the source's requested storage, in
// the target's storage class (the cluster's default when unset), with the
// source's access modes. It carries no owner reference: it holds data, and
// only the retention policy or deletionPolicy Delete removes it.
func desiredBackupClaim(bj *v1alpha1.BackupJob, r run, source *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	target := volumeTarget(bj)
	size := source.Spec.Resources.Requests[corev1.ResourceStorage]
	if target.Size != nil {
		size = *target.Size
	}
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.name,
			Namespace:   bj.Namespace,
			Labels:      runLabels(bj.Name, r.name),
			Annotations: backupAnnotations(bj, r),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: accessModes(source),
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeMode:  source.Spec.VolumeMode,
		},
	}
	if target.StorageClassName != "" {
		claim.Spec.StorageClassName = ptr.To(target.StorageClassName)
	}
	return claim
}

func volumeTarget(bj *v1alpha1.BackupJob) v1alpha1.BackupVolumeTarget {
	if bj.Spec.Target != nil && bj.Spec.Target.Volume != nil {
		return *bj.Spec.Target.Volume
	}
	return v1alpha1.BackupVolumeTarget{}
}

// snapshotTarget returns spec.target.snapshot, or nil for a volume target.
func snapshotTarget(bj *v1alpha1.BackupJob) *v1alpha1.BackupSnapshotTarget {
	if bj.Spec.Target == nil {
		return nil
	}
	return bj.Spec.Target.Snapshot
}

func accessModes(source *corev1.PersistentVolumeClaim) []corev1.PersistentVolumeAccessMode {
	if len(source.Spec.AccessModes) > 0 {
		return append([]corev1.PersistentVolumeAccessMode(nil), source.Spec.AccessModes...)
	}
	return []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
}

// desiredSnapshot is the VolumeSnapshot of a run with a snapshot target.
// Like a backup claim it has no owner reference.
func desiredSnapshot(bj *v1alpha1.BackupJob, r run) *snapshotv1.VolumeSnapshot {
	return desiredSnapshotOf(bj, r, bj.Spec.Source.PersistentVolumeClaimName)
}

// desiredSnapshotOf is the VolumeSnapshot of run r of claim.
func desiredSnapshotOf(bj *v1alpha1.BackupJob, r run, claim string) *snapshotv1.VolumeSnapshot {
	s := &snapshotv1.VolumeSnapshot{
		TypeMeta: metav1.TypeMeta{APIVersion: snapshotv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.name,
			Namespace:   bj.Namespace,
			Labels:      runLabels(bj.Name, r.name),
			Annotations: backupAnnotations(bj, r),
		},
		Spec: snapshotv1.VolumeSnapshotSpec{
			Source: snapshotv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)},
		},
	}
	if t := snapshotTarget(bj); t != nil && t.VolumeSnapshotClassName != "" {
		s.Spec.VolumeSnapshotClassName = ptr.To(t.VolumeSnapshotClassName)
	}
	return s
}

// desiredRunJob is the Job of a run with a volume target: the user's
// template with the source mounted read-only at /source and the run's new
// claim at /backup, the run's labels, the BackupJob as its controller, a
// deadline and the restricted security defaults.
func desiredRunJob(bj *v1alpha1.BackupJob, r run) *batchv1.Job {
	volumes := []corev1.Volume{
		claimVolume(sourceVolume, bj.Spec.Source.PersistentVolumeClaimName, true),
		claimVolume(backupVolume, r.name, false),
	}
	mounts := []corev1.VolumeMount{
		{Name: sourceVolume, MountPath: SourcePath, ReadOnly: true},
		{Name: backupVolume, MountPath: BackupPath},
	}
	job := jobFromTemplate(bj, bj.Spec.JobTemplate, r.name, runLabels(bj.Name, r.name), volumes, mounts)
	job.Annotations = mergeMaps(job.Annotations, runAnnotations(r))
	return job
}

// desiredDrillClaim is the claim of a restore drill: a new volume made from
// the backup (a clone of a backup claim, or a restore of a snapshot), of
// the backup's size and class. Unlike a backup it is a throw-away copy, and
// the BackupJob owns it.
func desiredDrillClaim(bj *v1alpha1.BackupJob, b *backup) *corev1.PersistentVolumeClaim {
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            DrillName(bj.Name, b.scheduled),
			Namespace:       bj.Namespace,
			Labels:          drillLabels(bj.Name, b.name),
			OwnerReferences: []metav1.OwnerReference{ownerReference(bj)},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: b.restoreSize()}},
			StorageClassName: b.storageClass,
		},
	}
	if b.kind == v1alpha1.SnapshotBackup {
		claim.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotv1.GroupName), Kind: "VolumeSnapshot", Name: b.name}
	} else {
		claim.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: b.name}
	}
	return claim
}

// desiredDrillJob is the verify Job of a restore drill, with the drill's
// claim mounted read-only at /backup.
func desiredDrillJob(bj *v1alpha1.BackupJob, b *backup) *batchv1.Job {
	name := DrillName(bj.Name, b.scheduled)
	volumes := []corev1.Volume{claimVolume(backupVolume, name, true)}
	mounts := []corev1.VolumeMount{{Name: backupVolume, MountPath: BackupPath, ReadOnly: true}}
	return jobFromTemplate(bj, bj.Spec.Verify.JobTemplate, name, drillLabels(bj.Name, b.name), volumes, mounts)
}

func claimVolume(name, claim string, readOnly bool) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly},
	}}
}

// jobFromTemplate makes a Job named name from a copy of template, with
// labels on the Job and its pods, volumes added to the pod and mounts to
// every container.
func jobFromTemplate(bj *v1alpha1.BackupJob, template *v1alpha1.BackupJobTemplate, name string, labels map[string]string,
	volumes []corev1.Volume, mounts []corev1.VolumeMount) *batchv1.Job {
	t := (*batchv1.JobTemplateSpec)(template.DeepCopy())
	spec := t.Spec
	// The operator bounds the history itself, after it has recorded each
	// run's result on its backup; a TTL could remove a Job before that.
	spec.TTLSecondsAfterFinished = nil
	if spec.ActiveDeadlineSeconds == nil {
		spec.ActiveDeadlineSeconds = ptr.To(int64(defaultActiveDeadline / time.Second))
	}
	// A selector of the user's could match other Jobs' pods.
	spec.Selector, spec.ManualSelector = nil, nil

	pod := &spec.Template
	pod.Labels = mergeMaps(pod.Labels, labels)
	if pod.Spec.RestartPolicy == "" || pod.Spec.RestartPolicy == corev1.RestartPolicyAlways {
		// Jobs accept only Never and OnFailure; Never keeps a failed
		// attempt's pod for its logs.
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, volumes...)
	for i := range pod.Spec.InitContainers {
		pod.Spec.InitContainers[i].VolumeMounts = append(pod.Spec.InitContainers[i].VolumeMounts, mounts...)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].VolumeMounts = append(pod.Spec.Containers[i].VolumeMounts, mounts...)
	}
	if pod.Spec.AutomountServiceAccountToken == nil {
		// A copy needs no credentials for the Kubernetes API; a template
		// that does says so.
		pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	}
	restrictPod(&pod.Spec)

	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       bj.Namespace,
			Labels:          mergeMaps(t.Labels, labels),
			Annotations:     t.Annotations,
			OwnerReferences: []metav1.OwnerReference{ownerReference(bj)},
		},
		Spec: spec,
	}
}

// restrictPod fills in, where the template leaves them unset, the settings
// that the restricted Pod Security Standard requires: a non-root user,
// the runtime's default seccomp profile, no privilege escalation and no
// capabilities. What the template sets is kept; the operator refuses to run
// a pod that still breaks the standard (templateProblems).
func restrictPod(spec *corev1.PodSpec) {
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	sc := spec.SecurityContext
	if sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = ptr.To(true)
	}
	if sc.RunAsUser == nil && !anyContainerSetsUser(spec) {
		sc.RunAsUser, sc.RunAsGroup = ptr.To(nonRootID), ptr.To(nonRootID)
	}
	if sc.FSGroup == nil {
		sc.FSGroup = ptr.To(nonRootID)
	}
	if sc.SeccompProfile == nil {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	for i := range spec.InitContainers {
		restrictContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		restrictContainer(&spec.Containers[i])
	}
}

func anyContainerSetsUser(spec *corev1.PodSpec) bool {
	for _, c := range append(append([]corev1.Container(nil), spec.InitContainers...), spec.Containers...) {
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			return true
		}
	}
	return false
}

func restrictContainer(c *corev1.Container) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	if sc.AllowPrivilegeEscalation == nil {
		sc.AllowPrivilegeEscalation = ptr.To(false)
	}
	if sc.Capabilities == nil {
		sc.Capabilities = &corev1.Capabilities{}
	}
	for _, dropped := range sc.Capabilities.Drop {
		if dropped == "ALL" {
			return
		}
	}
	sc.Capabilities.Drop = append(sc.Capabilities.Drop, "ALL")
}

// ownerReference makes bj the controller of a Job or drill claim, so that
// the garbage collector removes them with it. Backups never get one.
func ownerReference(bj *v1alpha1.BackupJob) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         v1alpha1.GroupVersion.String(),
		Kind:               "BackupJob",
		Name:               bj.Name,
		UID:                bj.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

func mergeMaps(base, extra map[string]string) map[string]string {
	if len(base) == 0 && len(extra) == 0 {
		return nil
	}
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// restoreSize is the storage a drill's claim asks for: the backup's size
// when known, else what the backup claim requested.
func (b *backup) restoreSize() resource.Quantity {
	if b.size != nil {
		return *b.size
	}
	return b.requested
}
