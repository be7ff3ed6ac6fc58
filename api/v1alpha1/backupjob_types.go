package v1alpha1

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels that people and tools use on a BackupJob's backups (the claims or
// snapshots its runs made). Backups carry labels rather than owner
// references, so that no garbage-collector cascade can delete them.
const (
	// BackupJobLabel names the BackupJob that made an object: a run's Job, a
	// backup volume or snapshot, a restore drill's claim.
	// `kubectl get pvc,volumesnapshots -l example.com/backupjob=NAME` lists a
	// BackupJob's backups, also after the BackupJob was deleted.
	BackupJobLabel = "example.com/backupjob"

	// PinnedLabel, set to "true" on a backup, keeps it whatever the
	// retention policy says. Remove the label to let retention delete it.
	PinnedLabel = "example.com/pinned"

	// BackupResultLabel, on a backup, is how its run ended: Succeeded or
	// Failed. A backup without it is a run in progress.
	BackupResultLabel = "example.com/result"
)

// Annotations on the backups of a PostgresCluster (spec.source.postgresCluster):
// which instance was copied and how far its data reaches.
const (
	// BackupSourceClusterAnnotation names the PostgresCluster backed up.
	BackupSourceClusterAnnotation = "example.com/source-postgrescluster"
	// BackupSourceInstanceAnnotation names its instance whose claim the
	// snapshot is of (CLUSTER-N), fenced while the snapshot was cut.
	BackupSourceInstanceAnnotation = "example.com/source-instance"
	// BackupTimelineAnnotation is the PostgreSQL timeline of the data.
	BackupTimelineAnnotation = "example.com/timeline"
	// BackupCheckpointLSNAnnotation is the WAL position of the checkpoint
	// that the clean shutdown wrote (pg_controldata's latest checkpoint).
	BackupCheckpointLSNAnnotation = "example.com/checkpoint-lsn"
	// BackupStartLSNAnnotation, on a base backup's claim, is the WAL
	// position where a restore's recovery starts (its backup_label's START
	// WAL LOCATION).
	BackupStartLSNAnnotation = "example.com/start-lsn"
	// BackupObjectStoreAnnotation, on the record of a base backup in an
	// object store (target.objectStore), is the folder of the cluster in
	// the store, as a path-style S3 URL: ENDPOINT/BUCKET/PATH. The backup
	// is named after its run there; restore it with a PostgresCluster's
	// spec.bootstrap.fromBackup.objectStore.
	BackupObjectStoreAnnotation = "example.com/object-store"
	// BackupEndLSNAnnotation, on a base backup's claim, is the WAL
	// position from which the backup is consistent (the end of the WAL
	// range in its manifest): every transaction whose commit ended there or
	// before is in the backup.
	BackupEndLSNAnnotation = "example.com/end-lsn"
	// BackupPointInTimeAnnotation, on the record of a base backup in an
	// object store, is a moment (RFC 3339) just after the backup ended
	// that a recovery can target (spec.bootstrap.fromBackup.targetTime):
	// its run committed a transaction after it, at which the recovery
	// stops. Missing when that commit failed (a failover during the run).
	BackupPointInTimeAnnotation = "example.com/point-in-time"
)

// BackupJobSpec is the desired state of a BackupJob: what to back up, when,
// where the copies go, and how many of them to keep.
//
// +kubebuilder:validation:XValidation:rule="!has(self.target) || !has(self.target.volume) || has(self.jobTemplate) || has(self.source.postgresCluster)",message="jobTemplate is required with a volume target of a claim: its Job copies /source into /backup",fieldPath=".jobTemplate",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!has(self.source.postgresCluster) || !has(self.jobTemplate)",message="a postgresCluster source takes no jobTemplate: the operator's Job streams a base backup of the cluster",fieldPath=".jobTemplate",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.target) || !has(self.target.snapshot) || !has(self.jobTemplate)",message="a snapshot target takes no jobTemplate: the snapshot is the copy",fieldPath=".jobTemplate",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || has(self.source.postgresCluster) || (has(self.verify.jobTemplate) && !has(self.verify.sql))",message="a claim's backups are checked by verify.jobTemplate (required), not verify.sql",fieldPath=".verify",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !has(self.source.postgresCluster) || (has(self.verify.sql) && !has(self.verify.jobTemplate))",message="a PostgresCluster's backups are checked by verify.sql (required), a query run in a restored copy, not verify.jobTemplate",fieldPath=".verify",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.target) || !has(self.target.objectStore) || has(self.source.postgresCluster)",message="target.objectStore takes a postgresCluster source: it holds base backups of a PostgresCluster, in the object store of its spec.backup",fieldPath=".target.objectStore",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.?verify.?recoveryTarget.orValue('EndOfArchive') == 'EndOfArchive' || self.?target.?objectStore.hasValue()",message="verify.recoveryTarget BackupEnd is for backups in an object store (target.objectStore): a volume or snapshot holds no archive to recover through",fieldPath=".verify.recoveryTarget",reason=FieldValueForbidden
type BackupJobSpec struct {
	// schedule says when runs start: five cron fields (minute, hour, day of
	// month, month, day of week; names such as MON or JAN allowed), or one of
	// @yearly, @monthly, @weekly, @daily, @hourly, or @every with whole
	// hours, minutes and seconds (such as @every 6h or @every 1h30m; at least
	// 1s), counted from the BackupJob's creation.
	// Times are read in spec.timeZone. The API server checks the shape only:
	// a value that is well formed but not a valid schedule (such as minute 61
	// or February 30) is reported by the operator with Ready=False, reason
	// InvalidSchedule, and no run starts until it is fixed.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('TZ=') && !self.startsWith('CRON_TZ=')",message="set the time zone in spec.timeZone, not in spec.schedule",reason=FieldValueForbidden
	// +kubebuilder:validation:XValidation:rule="self.matches('^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every ([0-9]+[hms])+|[0-9A-Za-z*/,?-]+( +[0-9A-Za-z*/,?-]+){4})$')",message="schedule must be five cron fields (minute hour day-of-month month day-of-week) separated by spaces, or @yearly, @monthly, @weekly, @daily, @hourly, or @every with whole hours, minutes and seconds such as @every 10s or @every 1h30m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^@every ([0-9]+[hms])+$') || duration(self.substring(7)) >= duration('1s')",message="@every needs a duration of at least 1s"
	Schedule string `json:"schedule"`

	// timeZone is the IANA time zone, such as Europe/Berlin, in which
	// schedule and the daily, weekly and monthly retention buckets are read.
	// Defaults to UTC. The operator carries its own copy of the time zone
	// database. Times that a daylight saving change skips or repeats: see the
	// README ("Schedule semantics").
	// +optional
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,13}(/[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,13})*$') && self != 'Local'",message="timeZone must be an IANA time zone name such as Europe/Berlin or UTC"
	TimeZone string `json:"timeZone,omitempty"`

	// suspend, when true, starts no new run. Runs already started go on, and
	// retention keeps being applied. Scheduled times that pass while
	// suspended are skipped: they are not caught up after resuming and not
	// counted in status.missedRuns. Set runNow for a run at once.
	// +optional
	// +kubebuilder:default=false
	Suspend *bool `json:"suspend,omitempty"`

	// concurrencyPolicy says what happens when a run is due while another is
	// still running (a Job whose pods are still pending counts as running):
	// Forbid (the default) skips the new run, Allow starts it alongside,
	// Replace stops the running one first (its backup is marked Failed).
	// +optional
	// +kubebuilder:default=Forbid
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// startingDeadlineSeconds is how late a run may start after its scheduled
	// time, for example after the operator was down or while Forbid held it
	// back. A run later than that is not started and counts as missed. When
	// unset, the most recent missed run is always caught up, once.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=31622400
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// runNow starts one run at once, outside the schedule, each time it is
	// set to a new value (for example the current date and time), including
	// when the BackupJob is created with it; the value itself has no meaning.
	// The run obeys concurrencyPolicy, and does not move the schedule.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	RunNow string `json:"runNow,omitempty"`

	// source is what to back up: a claim, or a PostgresCluster.
	// +required
	Source BackupSource `json:"source"`

	// target says where each run's copy goes: a new volume (the default), a
	// volume snapshot, or, for a PostgresCluster, its object store.
	// +optional
	// +kubebuilder:default={volume: {}}
	Target *BackupTarget `json:"target,omitempty"`

	// jobTemplate is the Job that copies the data, for a volume target
	// (required there; a snapshot target takes none). Creating a BackupJob
	// is creating pods: the operator runs this template's pods in the
	// BackupJob's namespace. It adds to the pod the volumes "source"
	// (spec.source, read-only, at /source) and "backup" (the run's new
	// claim, at /backup), its labels, an owner reference, the restricted
	// security context defaults and, unless the template sets it,
	// automountServiceAccountToken: false. The pod must meet the restricted
	// Pod Security Standard whatever the namespace enforces: the API server
	// refuses what the rules of BackupJobTemplate see, and the operator
	// judges the rest with the upstream Pod Security library at the API
	// server's version, reporting a refusal as Degraded, reason InvalidSpec.
	// Labels and annotations the operator reads as its own (example.com/*,
	// app.kubernetes.io/managed-by, app.kubernetes.io/name=website) are
	// refused in the template.
	// +optional
	JobTemplate *BackupJobTemplate `json:"jobTemplate,omitempty"`

	// retention says which backups to keep; the operator deletes the others.
	// Whatever it says, the newest successful backup and every backup
	// labelled example.com/pinned=true are kept. Defaults to keepLast: 7
	// (and keepFailed: 1).
	// +optional
	// +kubebuilder:default={keepLast: 7}
	Retention *BackupRetention `json:"retention,omitempty"`

	// verify, when set, runs a restore drill after every Nth successful
	// backup: a new claim is made from the backup and the verify Job
	// checks it, or, for a PostgresCluster, a temporary PostgresCluster is
	// restored from it and the verify query runs there; the result is
	// recorded on the backup and in the Verified condition.
	// +optional
	Verify *BackupVerify `json:"verify,omitempty"`

	// deletionPolicy says what happens to the backups when the BackupJob is
	// deleted: Retain (the default) keeps them, labelled with the
	// BackupJob's name; Delete deletes them, except pinned ones. Backups
	// never carry an owner reference, so only the operator, following this
	// policy, deletes them. A BackupJob deletes only the backups it made
	// (annotation example.com/backupjob-uid): a new BackupJob of the same
	// name leaves those of an earlier one alone.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy BackupDeletionPolicy `json:"deletionPolicy,omitempty"`

	// successfulJobsHistoryLimit is how many finished successful run Jobs
	// (with their pods and logs) are kept. It does not limit the backups
	// themselves: retention does. Defaults to 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	SuccessfulJobsHistoryLimit *int32 `json:"successfulJobsHistoryLimit,omitempty"`

	// failedJobsHistoryLimit is how many finished failed run Jobs are kept,
	// for their logs. Defaults to 3.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	FailedJobsHistoryLimit *int32 `json:"failedJobsHistoryLimit,omitempty"`
}

// ConcurrencyPolicy says what happens when a run is due while another runs.
//
// +kubebuilder:validation:Enum=Forbid;Allow;Replace
type ConcurrencyPolicy string

const (
	// ForbidConcurrent skips a run that is due while another runs. It counts
	// as missed unless it can still start, within startingDeadlineSeconds,
	// once the other run ends.
	ForbidConcurrent ConcurrencyPolicy = "Forbid"
	// AllowConcurrent starts every run when it is due.
	AllowConcurrent ConcurrencyPolicy = "Allow"
	// ReplaceConcurrent stops the running run and starts the new one.
	ReplaceConcurrent ConcurrencyPolicy = "Replace"
)

// BackupDeletionPolicy says what happens to a BackupJob's backups when the
// BackupJob is deleted.
//
// +kubebuilder:validation:Enum=Retain;Delete
type BackupDeletionPolicy string

const (
	// RetainBackups keeps the backups: they stay, labelled, without an owner.
	RetainBackups BackupDeletionPolicy = "Retain"
	// DeleteBackups deletes the backups with the BackupJob, except pinned
	// ones.
	DeleteBackups BackupDeletionPolicy = "Delete"
)

// BackupSource is what a BackupJob backs up: exactly one of a claim and a
// PostgresCluster.
//
// +kubebuilder:validation:XValidation:rule="has(self.persistentVolumeClaimName) != has(self.postgresCluster)",message="set exactly one of persistentVolumeClaimName and postgresCluster"
// +kubebuilder:validation:XValidation:rule="!has(self.allowPrimaryFencing) || !self.allowPrimaryFencing || has(self.postgresCluster)",message="allowPrimaryFencing applies to a postgresCluster source only",fieldPath=".allowPrimaryFencing",reason=FieldValueForbidden
type BackupSource struct {
	// persistentVolumeClaimName names the claim to back up, in the
	// BackupJob's namespace. A claim of a PostgresCluster (labelled
	// example.com/postgrescluster) is refused: a copy of a running
	// database's files is not a backup; name the cluster in postgresCluster
	// instead.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	PersistentVolumeClaimName string `json:"persistentVolumeClaimName,omitempty"`

	// postgresCluster names a PostgresCluster, in the BackupJob's
	// namespace, to back up consistently. With a volume target (the
	// default) each run's Job streams a base backup (pg_basebackup, with
	// its WAL, checked against its manifest) of the most caught-up ready
	// replica, else of the primary, into the run's new claim, as the
	// cluster's backup role (Secret CLUSTER-backup); nothing is stopped.
	// With a snapshot target each run fences that replica (its PostgreSQL
	// stops cleanly; the primary and the other replicas go on serving),
	// takes a VolumeSnapshot of its claim once it reports a clean shutdown,
	// and unfences it once the snapshot is ready, after which it catches
	// up; one run at a time fences a cluster. Restore with a
	// PostgresCluster's spec.bootstrap.fromBackup.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	PostgresCluster string `json:"postgresCluster,omitempty"`

	// allowPrimaryFencing lets a snapshot run fence the primary of a
	// PostgresCluster of a single instance, which has no replica (a base
	// backup, the volume target, needs no fence): writes stop while
	// PostgreSQL is stopped and the snapshot is cut. Without it such a run
	// is refused and the cluster is not touched. A cluster with replicas
	// never has its primary fenced: its runs wait for a ready replica.
	// +optional
	AllowPrimaryFencing bool `json:"allowPrimaryFencing,omitempty"`
}

// BackupTarget is where each run's copy goes: exactly one of volume,
// snapshot and objectStore.
//
// +kubebuilder:validation:XValidation:rule="[has(self.volume), has(self.snapshot), has(self.objectStore)].filter(x, x).size() == 1",message="set exactly one of volume, snapshot and objectStore"
type BackupTarget struct {
	// volume makes a new PersistentVolumeClaim per run, mounted at /backup
	// in the run's Job, for the Job to copy /source into.
	// +optional
	Volume *BackupVolumeTarget `json:"volume,omitempty"`

	// snapshot takes a VolumeSnapshot of the source per run. It needs the
	// VolumeSnapshot API (the external-snapshotter CRDs) and a CSI driver
	// that supports snapshots; without them the operator says so in the
	// Degraded condition.
	// +optional
	Snapshot *BackupSnapshotTarget `json:"snapshot,omitempty"`

	// objectStore streams a base backup of the PostgresCluster
	// (spec.source.postgresCluster) per run into the object store of the
	// cluster's spec.backup.objectStore, where its WAL is archived: with
	// both, the cluster can be restored to any moment since the backup
	// (spec.bootstrap.fromBackup.objectStore). The run's Job copies the
	// primary with pg_basebackup, as the backup role; it ends once the
	// WAL the backup needs is archived. The operator records each backup
	// in a ConfigMap named after its run, labelled as other backups are;
	// the backup in the store has the run's name too. A cluster without
	// spec.backup has its runs skipped, and Degraded says why. The
	// BackupJob's retention and deletionPolicy Delete do not delete
	// object-store backups: the cluster's spec.backup.retention does,
	// with the WAL only they need; a record goes once the cluster's status
	// shows its backup gone from the store and the BackupJob's retention
	// drops it. Restore drills (spec.verify) restore them from the store,
	// their archived WAL replayed to the archive's end.
	// +optional
	ObjectStore *BackupObjectStoreTarget `json:"objectStore,omitempty"`
}

// BackupObjectStoreTarget asks for base backups in the object store of
// the source PostgresCluster (its spec.backup.objectStore). It has no
// fields: the cluster's store, path and credentials are the ones its WAL
// is archived with, so that a backup and the WAL after it are found
// together.
type BackupObjectStoreTarget struct{}

// BackupVolumeTarget describes the claim made for each run.
type BackupVolumeTarget struct {
	// storageClassName is the StorageClass of the new claims. When empty, the
	// cluster's default StorageClass is used.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	StorageClassName string `json:"storageClassName,omitempty"`

	// size is the storage requested for each new claim, such as 10Gi. When
	// unset, the source claim's requested storage.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).isGreaterThan(quantity('0'))",message="size must be greater than zero"
	Size *resource.Quantity `json:"size,omitempty"`
}

// BackupSnapshotTarget describes the VolumeSnapshot taken for each run.
type BackupSnapshotTarget struct {
	// volumeSnapshotClassName is the VolumeSnapshotClass of the snapshots.
	// When empty, the default class of the source's CSI driver is used.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	VolumeSnapshotClassName string `json:"volumeSnapshotClassName,omitempty"`
}

// The rules of BackupJobTemplate read the pod spec with optional field
// selection (.?), so that a template that leaves a field out passes. Each
// rule walks one list, never two nested ones, and compares strings for
// equality rather than with regular expressions: the lists and strings of
// the Job's pod have no maxItems or maxLength of their own, so the API
// server estimates their cost from its request size limit, and refuses a
// CRD whose estimated cost is over its budget.

// BackupJobTemplate is a batch/v1 JobTemplateSpec (metadata and spec of a
// Job) from which the operator makes a run's or a restore drill's Job. The
// API server refuses a template whose pod could leave the BackupJob's
// namespace or reach into its node: host network, PID or IPC namespaces,
// hostPath volumes, privileged or Windows host-process containers,
// ephemeral containers, or a ServiceAccount other than "default"; what
// these rules can afford to see of the restricted Pod Security Standard:
// running as root, privilege escalation, the pod's seccomp, AppArmor or
// SELinux confinement lifted, volume types other than configMap, secret,
// downwardAPI, emptyDir, projected, persistentVolumeClaim, ephemeral and
// image (inline CSI included); and a pod placed by nodeName,
// runtimeClassName or a control-plane nodeSelector. The rest of the
// standard (capabilities, host ports, sysctls, the containers' seccomp,
// AppArmor, SELinux and /proc settings) and tolerations of control-plane
// taints are judged by the operator, with the upstream Pod Security
// library at the API server's version. Volumes named "source" and
// "backup" are the operator's to add, and so are the labels and
// annotations it reads as its own, refused in the Job's and the pod's
// metadata: keys under example.com/ (example.com/drill would make a run
// pass for a restore drill), app.kubernetes.io/managed-by, and
// app.kubernetes.io/name=website, which every Website's Service selects.
//
// +kubebuilder:validation:XValidation:rule="self.?spec.?template.?spec.hasValue()",message="jobTemplate.spec.template.spec is required: it holds the containers that copy the data",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?hostNetwork.orValue(false)",message="may not be true: the pod would use the node's network",fieldPath=".spec.template.spec.hostNetwork",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?hostPID.orValue(false)",message="may not be true: the pod would see the node's processes",fieldPath=".spec.template.spec.hostPID",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?hostIPC.orValue(false)",message="may not be true: the pod would share the node's IPC namespace",fieldPath=".spec.template.spec.hostIPC",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="(self.?spec.?template.?spec.?serviceAccountName.orValue('default') == 'default' || self.?spec.?template.?spec.?serviceAccountName.orValue('default').size() == 0) && (self.?spec.?template.?spec.?serviceAccount.orValue('default') == 'default' || self.?spec.?template.?spec.?serviceAccount.orValue('default').size() == 0)",message="may only be default: the pod may not act with another ServiceAccount's rights",fieldPath=".spec.template.spec.serviceAccountName",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?volumes.hasValue() || self.spec.template.spec.volumes.all(v, !has(v.hostPath))",message="may not contain hostPath volumes: the pod would read or write the node's files",fieldPath=".spec.template.spec.volumes",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?volumes.hasValue() || self.spec.template.spec.volumes.all(v, v.name != 'source' && v.name != 'backup')",message="may not contain volumes named source or backup: the operator adds them",fieldPath=".spec.template.spec.volumes",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?containers.hasValue() || self.spec.template.spec.containers.all(c, !c.?securityContext.?privileged.orValue(false) && !c.?securityContext.?windowsOptions.?hostProcess.orValue(false))",message="may not be privileged or Windows host-process containers: they control the node",fieldPath=".spec.template.spec.containers",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?initContainers.hasValue() || self.spec.template.spec.initContainers.all(c, !c.?securityContext.?privileged.orValue(false) && !c.?securityContext.?windowsOptions.?hostProcess.orValue(false))",message="may not be privileged or Windows host-process containers: they control the node",fieldPath=".spec.template.spec.initContainers",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?securityContext.?windowsOptions.?hostProcess.orValue(false)",message="may not be true: host-process pods control the node",fieldPath=".spec.template.spec.securityContext.windowsOptions.hostProcess",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?ephemeralContainers.hasValue()",message="may not be set: ephemeral containers are for debugging running pods",fieldPath=".spec.template.spec.ephemeralContainers",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?nodeName.hasValue() || self.spec.template.spec.nodeName.size() == 0",message="may not be set: the pod would bypass the scheduler and run on the node of its choosing",fieldPath=".spec.template.spec.nodeName",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?runtimeClassName.hasValue()",message="may not be set: the runtime class chooses how containers are isolated from the node, and the nodes they run on",fieldPath=".spec.template.spec.runtimeClassName",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?nodeSelector.hasValue() || !('node-role.kubernetes.io/control-plane' in self.spec.template.spec.nodeSelector || 'node-role.kubernetes.io/master' in self.spec.template.spec.nodeSelector)",message="may not select control-plane nodes",fieldPath=".spec.template.spec.nodeSelector",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.?spec.?template.?spec.?securityContext.?runAsNonRoot.orValue(true)",message="may not be false: the restricted Pod Security Standard forbids running as root",fieldPath=".spec.template.spec.securityContext.runAsNonRoot",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.?spec.?template.?spec.?securityContext.?runAsUser.orValue(1) != 0",message="may not be 0: the restricted Pod Security Standard forbids running as root",fieldPath=".spec.template.spec.securityContext.runAsUser",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.?spec.?template.?spec.?securityContext.?seccompProfile.?type.orValue('RuntimeDefault') != 'Unconfined'",message="may not be Unconfined: the restricted Pod Security Standard requires a seccomp profile",fieldPath=".spec.template.spec.securityContext.seccompProfile.type",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="self.?spec.?template.?spec.?securityContext.?appArmorProfile.?type.orValue('RuntimeDefault') != 'Unconfined'",message="may not be Unconfined: the Pod Security Standards forbid lifting AppArmor confinement",fieldPath=".spec.template.spec.securityContext.appArmorProfile.type",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?securityContext.?seLinuxOptions.?user.hasValue() && !self.?spec.?template.?spec.?securityContext.?seLinuxOptions.?role.hasValue()",message="may not set user or role: the Pod Security Standards forbid choosing the SELinux user or role",fieldPath=".spec.template.spec.securityContext.seLinuxOptions",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?containers.hasValue() || self.spec.template.spec.containers.all(c, c.?securityContext.?runAsNonRoot.orValue(true) && c.?securityContext.?runAsUser.orValue(1) != 0)",message="may not set securityContext.runAsNonRoot to false or securityContext.runAsUser to 0: the restricted Pod Security Standard forbids running as root",fieldPath=".spec.template.spec.containers",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?containers.hasValue() || self.spec.template.spec.containers.all(c, !c.?securityContext.?allowPrivilegeEscalation.orValue(false))",message="may not set securityContext.allowPrivilegeEscalation to true: the restricted Pod Security Standard forbids it",fieldPath=".spec.template.spec.containers",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?initContainers.hasValue() || self.spec.template.spec.initContainers.all(c, c.?securityContext.?runAsNonRoot.orValue(true) && c.?securityContext.?runAsUser.orValue(1) != 0)",message="may not set securityContext.runAsNonRoot to false or securityContext.runAsUser to 0: the restricted Pod Security Standard forbids running as root",fieldPath=".spec.template.spec.initContainers",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?initContainers.hasValue() || self.spec.template.spec.initContainers.all(c, !c.?securityContext.?allowPrivilegeEscalation.orValue(false))",message="may not set securityContext.allowPrivilegeEscalation to true: the restricted Pod Security Standard forbids it",fieldPath=".spec.template.spec.initContainers",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?spec.?volumes.hasValue() || self.spec.template.spec.volumes.all(v, has(v.configMap) || has(v.secret) || has(v.downwardAPI) || has(v.emptyDir) || has(v.projected) || has(v.persistentVolumeClaim) || has(v.ephemeral) || has(v.image))",message="may hold only configMap, secret, downwardAPI, emptyDir, projected, persistentVolumeClaim, ephemeral and image volumes: the restricted Pod Security Standard forbids the types that reach into the node or the network, and an inline CSI volume is its driver's to decide",fieldPath=".spec.template.spec.volumes",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?metadata.?labels.hasValue() || self.metadata.labels.all(k, !k.startsWith('example.com/') && k != 'app.kubernetes.io/managed-by') && self.metadata.labels[?'app.kubernetes.io/name'].orValue('none') != 'website'",message="may not hold keys under example.com/, app.kubernetes.io/managed-by, nor app.kubernetes.io/name=website: the operator reads them as its own",fieldPath=".metadata.labels",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?metadata.?annotations.hasValue() || self.metadata.annotations.all(k, !k.startsWith('example.com/'))",message="may not hold keys under example.com/: the operator reads them as its own",fieldPath=".metadata.annotations",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?metadata.?labels.hasValue() || self.spec.template.metadata.labels.all(k, !k.startsWith('example.com/') && k != 'app.kubernetes.io/managed-by') && self.spec.template.metadata.labels[?'app.kubernetes.io/name'].orValue('none') != 'website'",message="may not hold keys under example.com/, app.kubernetes.io/managed-by, nor app.kubernetes.io/name=website: the operator reads them as its own, and every Website's Service selects pods labelled app.kubernetes.io/name=website",fieldPath=".spec.template.metadata.labels",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="!self.?spec.?template.?metadata.?annotations.hasValue() || self.spec.template.metadata.annotations.all(k, !k.startsWith('example.com/'))",message="may not hold keys under example.com/: the operator reads them as its own",fieldPath=".spec.template.metadata.annotations",reason=FieldValueForbidden
type BackupJobTemplate batchv1.JobTemplateSpec

// BackupRetention says which backups to keep. A backup is kept when any
// rule keeps it; the others are deleted. The daily, weekly and monthly rules
// group successful backups by their scheduled time in spec.timeZone (weeks
// are ISO weeks, starting on Monday) and keep the newest backup of each of
// the N most recent days, weeks or months that have one, as restic and k8up
// do. Failed runs never count towards these rules: only keepFailed keeps
// them. Together the rules keep at most 400 backups, so that status can list
// them all.
//
// +kubebuilder:validation:XValidation:rule="self.?keepLast.orValue(0) + self.?keepDaily.orValue(0) + self.?keepWeekly.orValue(0) + self.?keepMonthly.orValue(0) + self.?keepFailed.orValue(0) <= 400",message="keepLast, keepDaily, keepWeekly, keepMonthly and keepFailed may add up to at most 400"
type BackupRetention struct {
	// keepLast keeps the N newest successful backups.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=400
	KeepLast *int32 `json:"keepLast,omitempty"`

	// keepDaily keeps the newest successful backup of each of the N most
	// recent days that have one.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=400
	KeepDaily *int32 `json:"keepDaily,omitempty"`

	// keepWeekly keeps the newest successful backup of each of the N most
	// recent ISO weeks that have one.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=260
	KeepWeekly *int32 `json:"keepWeekly,omitempty"`

	// keepMonthly keeps the newest successful backup of each of the N most
	// recent months that have one.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=240
	KeepMonthly *int32 `json:"keepMonthly,omitempty"`

	// keepFailed keeps the volumes of the N newest failed runs, for
	// inspection. Failed runs are kept by this rule only, so they never
	// displace a successful backup. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	KeepFailed *int32 `json:"keepFailed,omitempty"`
}

// BackupVerify configures restore drills.
type BackupVerify struct {
	// everyNth runs a drill after every Nth successful backup: 1 checks
	// every backup. Defaults to 1.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	EveryNth int32 `json:"everyNth,omitempty"`

	// jobTemplate is the Job that checks a restored copy of a claim's
	// backup (required with spec.source.persistentVolumeClaimName). The
	// operator mounts a new claim made from the backup at /backup,
	// read-only, and records the Job's result on the backup. The API server
	// refuses the same templates as for spec.jobTemplate.
	// +optional
	JobTemplate *BackupJobTemplate `json:"jobTemplate,omitempty"`

	// sql checks a restored copy of a PostgresCluster's backup (required
	// with spec.source.postgresCluster): the operator brings up a
	// temporary single-instance PostgresCluster from the backup, runs this
	// query in its application database as its owner, and records on the
	// backup whether it returned true (its first column of its first row,
	// such as SELECT count(*) > 0 FROM orders), or the database's message;
	// then it deletes the temporary cluster and its claims. A backup in the
	// object store (target.objectStore) is restored from the source
	// cluster's store, its archived WAL replayed to the archive's end: the
	// drill checks the base backup and the archive after it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	SQL string `json:"sql,omitempty"`

	// recoveryTarget is where the drill of a backup in the object store
	// (target.objectStore) recovers to. EndOfArchive, the default, replays
	// all the WAL archived after the backup, checking the archive with it.
	// BackupEnd recovers to a point in time (bootstrap.fromBackup's
	// targetTime) just after the backup ended: the query sees what the
	// backup held and nothing committed later, and the drill checks the
	// point-in-time restore a user would make. Its run's Job marks that
	// moment with a commit on the primary, which the drill's recovery
	// needs to stop there: it reaches the archive within the cluster's
	// spec.backup.archiveTimeout.
	// +optional
	// +kubebuilder:validation:Enum=EndOfArchive;BackupEnd
	RecoveryTarget DrillRecoveryTarget `json:"recoveryTarget,omitempty"`
}

// DrillRecoveryTarget is where a restore drill of an object-store backup
// recovers to.
type DrillRecoveryTarget string

const (
	// DrillToEndOfArchive replays the archive after the backup to its end.
	DrillToEndOfArchive DrillRecoveryTarget = "EndOfArchive"
	// DrillToBackupEnd recovers to the point in time the backup's run
	// marked just after the backup ended.
	DrillToBackupEnd DrillRecoveryTarget = "BackupEnd"
)

// BackupKind is what a backup is.
//
// +kubebuilder:validation:Enum=Volume;Snapshot;ObjectStore
type BackupKind string

const (
	// VolumeBackup is a PersistentVolumeClaim that a run's Job filled.
	VolumeBackup BackupKind = "Volume"
	// SnapshotBackup is a VolumeSnapshot of the source.
	SnapshotBackup BackupKind = "Snapshot"
	// ObjectStoreBackup is a base backup in a PostgresCluster's object
	// store, recorded in a ConfigMap of the same name.
	ObjectStoreBackup BackupKind = "ObjectStore"
)

// BackupResult is the outcome of the run that made a backup.
//
// +kubebuilder:validation:Enum=Running;Succeeded;Failed
type BackupResult string

const (
	// BackupRunning: the run has not finished. Retention never deletes it.
	BackupRunning BackupResult = "Running"
	// BackupSucceeded: the run's Job succeeded (and, for a snapshot, the
	// snapshot is ready to use).
	BackupSucceeded BackupResult = "Succeeded"
	// BackupFailed: the run's Job failed, was replaced, or its snapshot
	// failed.
	BackupFailed BackupResult = "Failed"
)

// VerificationResult is the outcome of a restore drill of a backup.
//
// +kubebuilder:validation:Enum=Running;Passed;Failed
type VerificationResult string

const (
	// VerificationRunning: the drill has not finished.
	VerificationRunning VerificationResult = "Running"
	// VerificationPassed: the verify Job succeeded on the restored copy.
	VerificationPassed VerificationResult = "Passed"
	// VerificationFailed: the copy could not be restored or the verify Job
	// failed.
	VerificationFailed VerificationResult = "Failed"
)

// RetentionRule names why a backup is kept.
//
// +kubebuilder:validation:Enum=NewestSuccessful;NewestVerified;Pinned;Last;Daily;Weekly;Monthly;Failed
type RetentionRule string

const (
	// KeptAsNewestSuccessful: the newest successful backup, never deleted,
	// whatever the policy says.
	KeptAsNewestSuccessful RetentionRule = "NewestSuccessful"
	// KeptAsNewestVerified: the newest backup whose restore drill passed,
	// never deleted either, so that a newer backup not yet (or not
	// successfully) restored does not take the place of the last one known
	// to restore.
	KeptAsNewestVerified RetentionRule = "NewestVerified"
	// KeptAsPinned: the backup is labelled example.com/pinned=true.
	KeptAsPinned RetentionRule = "Pinned"
	// KeptByLast: one of the keepLast newest successful backups.
	KeptByLast RetentionRule = "Last"
	// KeptByDaily: the newest successful backup of one of the keepDaily most
	// recent days that have one.
	KeptByDaily RetentionRule = "Daily"
	// KeptByWeekly: the same for ISO weeks and keepWeekly.
	KeptByWeekly RetentionRule = "Weekly"
	// KeptByMonthly: the same for months and keepMonthly.
	KeptByMonthly RetentionRule = "Monthly"
	// KeptByFailed: one of the keepFailed newest failed runs.
	KeptByFailed RetentionRule = "Failed"
)

// Backup is one backup of a BackupJob, as status lists it.
type Backup struct {
	// name of the PersistentVolumeClaim or VolumeSnapshot, or of the
	// ConfigMap that records a base backup in an object store (named so
	// there too), in the BackupJob's namespace. It is also the name of the
	// run's Job.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// kind is Volume (a PersistentVolumeClaim), Snapshot (a
	// VolumeSnapshot) or ObjectStore (a base backup in an object store).
	// +required
	Kind BackupKind `json:"kind"`

	// scheduledTime is the time the run was scheduled for (for runs started
	// by spec.runNow, when it was asked for). Retention buckets backups by
	// it.
	// +required
	ScheduledTime metav1.Time `json:"scheduledTime"`

	// result of the run that made the backup.
	// +required
	Result BackupResult `json:"result"`

	// size of the backup: the claim's capacity, the snapshot's restore
	// size, or the bytes of an object-store backup before compression,
	// once the backup has a result.
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// verified is the result of the restore drill of this backup, when one
	// ran.
	// +optional
	Verified VerificationResult `json:"verified,omitempty"`

	// keptBy lists the retention rules that keep the backup. It is empty for
	// a run in progress, which retention never deletes, for a backup
	// the operator is deleting: one that stays listed so could not be
	// deleted, and the RetentionApplied condition says why; and for an
	// object-store backup the policy no longer keeps, which the
	// BackupJob's retention does not delete (the RetentionApplied
	// condition lists them).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=7
	KeptBy []RetentionRule `json:"keptBy,omitempty"`
}

// BackupRunFailure is a run that failed.
type BackupRunFailure struct {
	// run is the run's name, that of its backup.
	// +kubebuilder:validation:MaxLength=253
	Run string `json:"run"`

	// scheduledTime is the time the run was scheduled for.
	ScheduledTime metav1.Time `json:"scheduledTime"`

	// reason is why the run failed, a reason of the LastRunSucceeded
	// condition.
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason"`

	// message says it in words.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Message string `json:"message,omitempty"`
}

// BackupJobStatus is what the operator last observed of a BackupJob's runs
// and backups.
type BackupJobStatus struct {
	// observedGeneration is the metadata.generation of the BackupJob that
	// this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions tell whether the BackupJob is Ready, whether its last run
	// succeeded, whether retention was applied, whether the last restore
	// drill passed, and whether it is Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastScheduleTime is the scheduled time of the most recent scheduled
	// run the operator started (runs asked for by spec.runNow do not move
	// it). The schedule resumes from it after a restart.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// lastMissedTime is the most recent scheduled time that got no run and
	// no later run was started for: it was past startingDeadlineSeconds, or
	// the BackupJob was suspended. The schedule resumes from the later of it
	// and lastScheduleTime, so that a miss is counted once.
	// +optional
	LastMissedTime *metav1.Time `json:"lastMissedTime,omitempty"`

	// nextScheduleTime is when the next run is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessfulTime is when the most recent successful run finished.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// lastFailure is the most recent run that failed, kept after retention
	// (keepFailed) and the Job history limit removed its backup and its
	// Job: the LastRunSucceeded condition goes on telling of it until a
	// later run finishes.
	// +optional
	LastFailure *BackupRunFailure `json:"lastFailure,omitempty"`

	// missedRuns counts the scheduled times, since the BackupJob was
	// created, that got no run: when several passed without a run (the
	// operator was down, or concurrencyPolicy Forbid held them back), only
	// the most recent is caught up and the others are missed; one past
	// startingDeadlineSeconds is missed too. A run started late is not
	// missed. Times skipped while suspended are not counted. Above 100 at
	// once the count is estimated, as the built-in CronJob does.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MissedRuns int64 `json:"missedRuns,omitempty"`

	// lastRunNow is the spec.runNow value of the most recent run started on
	// request, so that each new value starts exactly one run.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastRunNow string `json:"lastRunNow,omitempty"`

	// active lists the Jobs of the runs in progress.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Active []corev1.ObjectReference `json:"active,omitempty"`

	// backupCount is the number of backups that exist, successful or not.
	// +optional
	// +kubebuilder:validation:Minimum=0
	BackupCount int32 `json:"backupCount,omitempty"`

	// backups lists the backups that exist, newest first. Retention keeps
	// at most 400 plus the pinned ones; beyond 500 the oldest are not listed.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=500
	Backups []Backup `json:"backups,omitempty"`
}

// BackupJob backs up a PersistentVolumeClaim, or consistently a
// PostgresCluster, on a schedule, like a CronJob whose every run makes a new
// volume (or snapshot), and deletes the backups
// that its retention policy no longer keeps, never the newest successful
// one. Its schedule state lives in status, so that a restart or a failover
// neither loses nor repeats a run.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=bj,categories={all,backup}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Backups",type=integer,JSONPath=`.status.backupCount`
// +kubebuilder:printcolumn:name="Next Run",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,priority=1,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Missed",type=integer,priority=1,JSONPath=`.status.missedRuns`
// +kubebuilder:printcolumn:name="Status",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be at most 52 characters of lower-case letters, digits and '-', starting with a letter and ending with a letter or digit, because each run is named NAME-UNIXTIME and must fit in 63 characters"
type BackupJob struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the BackupJob.
	// +required
	Spec BackupJobSpec `json:"spec"`

	// status is the observed state of the BackupJob, written by the
	// operator.
	// +optional
	Status BackupJobStatus `json:"status,omitempty"`
}

// BackupJobList is a list of BackupJobs.
//
// +kubebuilder:object:root=true
type BackupJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupJob `json:"items"`
}

func init() {
	SchemeBuilder.Register(&BackupJob{}, &BackupJobList{})
}
