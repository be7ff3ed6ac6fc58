package backupjob

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance"
	"example.com/platform-operator/internal/instance/postgres"
)

// A run of a PostgresCluster source with a volume target is a base
// backup: a Job streams a copy of one ready instance (the most caught-up
// replica, else the primary) with pg_basebackup, as the cluster's backup
// role (replication only), into the run's new claim, with the WAL that
// makes the copy consistent, and checks it against its manifest. Nothing
// is fenced: writes go on and every replica stays a failover candidate.
// The claim's data directory (pgdata) is what a PostgresCluster restored
// from it (spec.bootstrap.fromBackup) starts from. The run's result is its
// Job's, recorded as for any copy Job.

// The base backup Job shares the layout of the PostgresCluster's pods: the
// PostgreSQL image runs the operator's binary, which an init container
// copies from the operator's image, as the postgres user of the official
// images.
const (
	baseBackupContainer = "pg-basebackup"
	toolsVolume         = "tools"
	toolsDir            = "/controller"
	toolsBinary         = toolsDir + "/manager"
	postgresUID         = int64(999)
	postgresBinDir      = "/usr/lib/postgresql/15/bin"
	// baseBackupRetries is how often a failed copy is tried again: the
	// copy restarts from nothing each time (a good copy already made is
	// kept), so a lost connection costs one more attempt, not the run.
	baseBackupRetries = 2
)

// baseBackupOptions are what a base backup Job needs besides the
// BackupJob and the cluster.
type baseBackupOptions struct {
	operatorImage, clusterDomain string
}

// chooseBaseBackupSource is the instance of pg that a base backup copies,
// or why the run waits: the most caught-up ready replica (as for a fence),
// else the ready primary, whose copy costs it reads, not writes.
func chooseBaseBackupSource(pg *v1alpha1.PostgresCluster) (string, *cause) {
	var replicas []v1alpha1.PostgresInstanceStatus
	primary := ""
	for _, i := range pg.Status.Instances {
		switch {
		case !i.Ready || i.Fenced:
		case i.Name == pg.Status.CurrentPrimary && i.Role == v1alpha1.PostgresPrimaryRole:
			primary = i.Name
		case i.Role == v1alpha1.PostgresReplicaRole && i.Name != pg.Status.TargetPrimary && ordinal(pg.Name, i.Name) <= int(pg.Spec.Instances):
			replicas = append(replicas, i)
		}
	}
	if len(replicas) > 0 {
		slices.SortFunc(replicas, func(x, y v1alpha1.PostgresInstanceStatus) int {
			return cmp.Or(cmp.Compare(parseLSN(y.ReceivedLSN), parseLSN(x.ReceivedLSN)),
				cmp.Compare(parseLSN(y.ReplayedLSN), parseLSN(x.ReplayedLSN)), cmp.Compare(x.Name, y.Name))
		})
		return replicas[0].Name, nil
	}
	if primary != "" {
		return primary, nil
	}
	return "", &cause{reason: v1alpha1.BackupJobNoReadyReplicaReason,
		message: fmt.Sprintf("No instance of PostgresCluster %s is ready to stream a base backup from: the run waits", pg.Name)}
}

// startBaseBackupRun starts a base backup run: its claim, annotated with
// the instance it copies, then its Job.
func (r *Reconciler) startBaseBackupRun(ctx context.Context, bj *v1alpha1.BackupJob, obs *observation, rn run, out *outcome) startOutcome {
	source, wait := chooseBaseBackupSource(obs.cluster)
	if wait != nil {
		obs.waiting = wait
		return runWaiting
	}
	desired := desiredBaseBackupClaim(bj, rn, obs.cluster, instanceOf(obs.cluster, source))
	if o := r.startClaimRun(ctx, bj, obs, rn, desired, out); o != runStarted {
		return o
	}
	r.Recorder.Eventf(bj, nil, corev1.EventTypeNormal, "RunStarted", "Run",
		"Run %s started (scheduled for %s): Job %s streams a base backup of instance %s of PostgresCluster %s into the new claim %s",
		rn.name, stamp(rn.scheduled), rn.name, source, obs.cluster.Name, rn.name)
	return runStarted
}

// desiredBaseBackupClaim is the claim of a base backup run: the size of
// spec.target.volume, else the cluster's storage size, in the target's
// storage class, else the cluster's (a restore clones the claim, which
// needs the class of the cluster it makes), annotated with the cluster,
// the instance copied and its timeline.
func desiredBaseBackupClaim(bj *v1alpha1.BackupJob, rn run, pg *v1alpha1.PostgresCluster, source *v1alpha1.PostgresInstanceStatus) *corev1.PersistentVolumeClaim {
	target := volumeTarget(bj)
	size := pg.Spec.Storage.Size
	if target.Size != nil {
		size = *target.Size
	}
	annotations := backupAnnotations(bj, rn)
	annotations[v1alpha1.BackupSourceClusterAnnotation] = pg.Name
	annotations[v1alpha1.BackupSourceInstanceAnnotation] = source.Name
	if source.Timeline > 0 {
		annotations[v1alpha1.BackupTimelineAnnotation] = strconv.FormatInt(source.Timeline, 10)
	}
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: rn.name, Namespace: bj.Namespace, Labels: runLabels(bj.Name, rn.name), Annotations: annotations,
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			StorageClassName: pg.Spec.Storage.StorageClassName,
		},
	}
	if target.StorageClassName != "" {
		claim.Spec.StorageClassName = ptr.To(target.StorageClassName)
	}
	return claim
}

// desiredBaseBackupJob is the Job of a base backup run: `instance
// basebackup` from the instance named on the run's claim, through its
// stable DNS name under the cluster's headless Service, into /backup/pgdata
// of the run's claim, with the backup role's password from its Secret.
func desiredBaseBackupJob(bj *v1alpha1.BackupJob, rn run, pg *v1alpha1.PostgresCluster, source string, opts baseBackupOptions) *batchv1.Job {
	host := fmt.Sprintf("%s.%s.%s.svc.%s", source, pg.Name, pg.Namespace, opts.clusterDomain)
	container := corev1.Container{
		Name:  baseBackupContainer,
		Image: pg.Spec.Image,
		Command: []string{toolsBinary, "instance", "basebackup",
			"--host", host, "--label", rn.name, "--dir", instance.DefaultBaseBackupDir},
		Env: []corev1.EnvVar{
			{Name: "PG_BIN_DIR", Value: postgresBinDir},
			secretEnv(instance.BackupPasswordEnv, v1alpha1.PostgresBackupSecretName(pg.Name), corev1.BasicAuthPasswordKey),
		},
	}
	template := postgresToolTemplate(container, opts.operatorImage, baseBackupRetries)
	job := jobFromTemplate(bj, template, rn.name, runLabels(bj.Name, rn.name),
		[]corev1.Volume{claimVolume(backupVolume, rn.name, false)},
		[]corev1.VolumeMount{{Name: backupVolume, MountPath: BackupPath}})
	job.Annotations = mergeMaps(job.Annotations, runAnnotations(rn))
	return job
}

// baseBackupStart is what the successful base backup b records of itself,
// read from its Job's pod: the termination message of `instance
// basebackup` (the WAL position and timeline where the backup starts). It
// is nil for other runs, and when the pod or its message is gone: the
// backup is whole all the same, its start is then not on record.
func (r *Reconciler) baseBackupStart(ctx context.Context, bj *v1alpha1.BackupJob, b *backup) map[string]string {
	if bj.Spec.Source.PostgresCluster == "" {
		return nil
	}
	terminated, err := r.terminatedContainers(ctx, bj.Namespace, b.name, baseBackupContainer, corev1.PodSucceeded)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("The start and end of a base backup are not recorded", "run", b.name, "error", err.Error())
		return nil
	}
	for _, t := range terminated {
		if start := parseBaseBackupResult(t); start != nil {
			return start
		}
	}
	return nil
}

// parseBaseBackupResult reads the termination message of a base backup's
// container as annotations of its backup, nil when it is not a result.
func parseBaseBackupResult(t *corev1.ContainerStateTerminated) map[string]string {
	if t.ExitCode != 0 {
		return nil
	}
	var result instance.BaseBackupResult
	if err := json.Unmarshal([]byte(t.Message), &result); err != nil || result.Timeline < 1 {
		return nil
	}
	start, startErr := postgres.ParseLSN(result.StartLSN)
	end, endErr := postgres.ParseLSN(result.EndLSN)
	if startErr != nil || endErr != nil || end < start {
		return nil
	}
	return map[string]string{
		v1alpha1.BackupStartLSNAnnotation: start.String(),
		v1alpha1.BackupEndLSNAnnotation:   end.String(),
		v1alpha1.BackupTimelineAnnotation: strconv.FormatInt(result.Timeline, 10),
	}
}

// PostgresToolLabel marks the pods of the operator's PostgreSQL Jobs (base
// backups and restore drills' queries) with their container's name:
// `kubectl get pods -l example.com/postgres-tool` lists them, and the local
// cluster's simulation finds them without listing every run's pod.
const PostgresToolLabel = "example.com/postgres-tool"

// postgresToolTemplate is the Job of a command of the operator's binary
// run in a PostgreSQL image, as the PostgresCluster's pods run it: an init
// container copies the binary from the operator's image, and the
// container runs as the postgres user of the official images, under the
// restricted Pod Security Standard, its result or the end of its log as
// its termination message.
func postgresToolTemplate(container corev1.Container, operatorImage string, retries int32) *v1alpha1.BackupJobTemplate {
	restricted := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			RunAsNonRoot:             ptr.To(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
	container.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	container.SecurityContext = restricted()
	container.VolumeMounts = append(container.VolumeMounts, corev1.VolumeMount{Name: toolsVolume, MountPath: toolsDir})
	return &v1alpha1.BackupJobTemplate{Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To(retries),
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{PostgresToolLabel: container.Name}}, Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(postgresUID), RunAsGroup: ptr.To(postgresUID), FSGroup: ptr.To(postgresUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			EnableServiceLinks: ptr.To(false),
			InitContainers: []corev1.Container{{
				Name:            "install",
				Image:           operatorImage,
				Command:         []string{"/platform-operator", "instance", "install", toolsBinary},
				SecurityContext: restricted(),
				VolumeMounts:    []corev1.VolumeMount{{Name: toolsVolume, MountPath: toolsDir}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
			Containers: []corev1.Container{container},
			Volumes:    []corev1.Volume{{Name: toolsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}},
	}}
}

// secretEnv is a variable from a key of a Secret.
func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

// terminatedContainers are the terminated states of container in the pods
// of Job job, those that ended in phase only.
func (r *Reconciler) terminatedContainers(ctx context.Context, namespace, job, container string, phase corev1.PodPhase) ([]*corev1.ContainerStateTerminated, error) {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{batchv1.JobNameLabel: job}); err != nil {
		return nil, fmt.Errorf("list the pods of Job %s: %w", job, err)
	}
	var out []*corev1.ContainerStateTerminated
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != phase {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == container && c.State.Terminated != nil {
				out = append(out, c.State.Terminated)
			}
		}
	}
	return out, nil
}
