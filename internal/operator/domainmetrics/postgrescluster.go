package domainmetrics

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

var (
	postgresPhase = prometheus.NewDesc("platform_operator_postgrescluster_phase",
		"Phase of a PostgresCluster (status.phase): 1 for the phase it is in, 0 for the others, as kube_pod_status_phase.",
		[]string{"namespace", "name", "phase"}, nil)
	postgresInstancesDesired = prometheus.NewDesc("platform_operator_postgrescluster_instances_desired",
		"PostgreSQL instances a PostgresCluster asks for (spec.instances).", objectLabels, nil)
	postgresInstancesReady = prometheus.NewDesc("platform_operator_postgrescluster_instances_ready",
		"Instances of a PostgresCluster that accept connections and, replicas, stream from the primary (status.instances[].ready).", objectLabels, nil)
	postgresPromotionEpoch = prometheus.NewDesc("platform_operator_postgrescluster_promotion_epoch",
		"Changes of a PostgresCluster's target primary (status.promotionEpoch): its increase counts failovers and switchovers.", objectLabels, nil)
	postgresInstanceLag = prometheus.NewDesc("platform_operator_postgrescluster_instance_lag_bytes",
		"How far an instance's replay is behind the primary's current WAL position as last reported (status.instances[].lagBytes), by instance and its role (primary, replica, or empty before it reported).",
		[]string{"namespace", "name", "instance", "role"}, nil)
	postgresLastBackup = prometheus.NewDesc("platform_operator_postgrescluster_last_backup_success_timestamp_seconds",
		"When the most recent successful backup of a PostgresCluster finished, the latest status.lastSuccessfulTime of the BackupJobs whose source it is, in seconds since the epoch; absent when none succeeded or BackupJobs are not served.", objectLabels, nil)
	postgresArchivePendingWAL = prometheus.NewDesc("platform_operator_postgrescluster_archive_pending_wal",
		"WAL files a PostgresCluster's primary has written and not yet archived (status.archiving.pendingWAL): it keeps them on its volume until the object store has them; absent without status.archiving.", objectLabels, nil)
	postgresLastArchived = prometheus.NewDesc("platform_operator_postgrescluster_last_archived_timestamp_seconds",
		"When the object store last confirmed a WAL file of a PostgresCluster (status.archiving.lastArchivedAt), in seconds since the epoch; absent before the first or without status.archiving.", objectLabels, nil)
	postgresCertificateExpiry = prometheus.NewDesc("platform_operator_postgrescluster_certificate_expiry_timestamp_seconds",
		"When the server certificate a PostgresCluster's instances are given ends (status.tls.notAfter), in seconds since the epoch: the operator renews its own a third of its life before; one the user brings (spec.tls) is the user's to renew.", objectLabels, nil)
	postgresContinuousArchiving = prometheus.NewDesc("platform_operator_postgrescluster_continuous_archiving",
		"Reason of a PostgresCluster's ContinuousArchiving condition: 1 for the reason it has (Archiving, ArchiveFailing, Starting, NoPrimary), 0 for the others; absent without the condition (no spec.backup).",
		[]string{"namespace", "name", "reason"}, nil)
)

// postgresPhases are the phases every cluster has a series of, so that a
// phase's series exists (at 0) before the first cluster enters it.
var postgresPhases = []v1alpha1.PostgresClusterPhase{
	v1alpha1.PostgresInitializing, v1alpha1.PostgresHealthy, v1alpha1.PostgresFailingOver, v1alpha1.PostgresSwitchingOver,
	v1alpha1.PostgresUpgrading, v1alpha1.PostgresHibernated, v1alpha1.PostgresDegraded, v1alpha1.PostgresDeleting,
}

// archivingReasons are the reasons of ContinuousArchiving that a cluster
// with the condition has a series of, as postgresPhases.
var archivingReasons = []string{
	v1alpha1.PostgresArchivingReason, v1alpha1.PostgresArchiveFailingReason, v1alpha1.PostgresArchiveStartingReason, v1alpha1.PostgresNoPrimaryReason,
}

var postgresClusterKind = kind{
	descs: []*prometheus.Desc{postgresPhase, postgresInstancesDesired, postgresInstancesReady, postgresPromotionEpoch,
		postgresInstanceLag, postgresLastBackup, postgresArchivePendingWAL, postgresLastArchived, postgresContinuousArchiving,
		postgresCertificateExpiry},
	collect: func(ctx context.Context, r client.Reader, running map[string]bool, emit emitter) error {
		var list v1alpha1.PostgresClusterList
		if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("list PostgresClusters from the cache: %w", err)
		}
		// Only where BackupJobs' controller runs is their informer in the
		// cache: listing them otherwise would start one.
		var lastBackups map[types.NamespacedName]float64
		if running[BackupJob] {
			var err error
			if lastBackups, err = lastBackupOfClusters(ctx, r); err != nil {
				return err
			}
		}
		for i := range list.Items {
			emitPostgresCluster(emit, &list.Items[i], lastBackups)
		}
		return nil
	},
}

func emitPostgresCluster(emit emitter, pg *v1alpha1.PostgresCluster, lastBackups map[types.NamespacedName]float64) {
	s := &pg.Status
	phases := postgresPhases
	if s.Phase != "" && !slices.Contains(phases, s.Phase) {
		phases = append(slices.Clone(phases), s.Phase)
	}
	for _, p := range phases {
		value := 0.0
		if p == s.Phase {
			value = 1
		}
		emit.gauge(postgresPhase, value, pg.Namespace, pg.Name, string(p))
	}
	// The API server defaults spec.instances to 1.
	desired := max(pg.Spec.Instances, 1)
	ready := 0
	for _, inst := range s.Instances {
		if inst.Ready {
			ready++
		}
		emit.gauge(postgresInstanceLag, float64(inst.LagBytes), pg.Namespace, pg.Name, inst.Name, inst.Role)
	}
	emit.gauge(postgresInstancesDesired, float64(desired), pg.Namespace, pg.Name)
	emit.gauge(postgresInstancesReady, float64(ready), pg.Namespace, pg.Name)
	emit.gauge(postgresPromotionEpoch, float64(s.PromotionEpoch), pg.Namespace, pg.Name)
	if t, ok := lastBackups[types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}]; ok {
		emit.gauge(postgresLastBackup, t, pg.Namespace, pg.Name)
	}
	if t := s.TLS; t != nil && t.NotAfter != nil {
		emit.gauge(postgresCertificateExpiry, unixSeconds(*t.NotAfter), pg.Namespace, pg.Name)
	}
	emitArchiving(emit, pg)
	emit.conditions(PostgresCluster, pg, s.Conditions)
}

// emitArchiving sends where continuous archiving stands: status.archiving's
// figures and the reason of ContinuousArchiving, which
// platform_operator_condition does not carry (an alert tells a failing
// archive from one that has not started).
func emitArchiving(emit emitter, pg *v1alpha1.PostgresCluster) {
	if a := pg.Status.Archiving; a != nil {
		emit.gauge(postgresArchivePendingWAL, float64(a.PendingWAL), pg.Namespace, pg.Name)
		if a.LastArchivedAt != nil {
			emit.gauge(postgresLastArchived, unixSeconds(*a.LastArchivedAt), pg.Namespace, pg.Name)
		}
	}
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresContinuousArchivingCondition)
	if c == nil {
		return
	}
	reasons := archivingReasons
	if c.Reason != "" && !slices.Contains(reasons, c.Reason) {
		reasons = append(slices.Clone(reasons), c.Reason)
	}
	for _, r := range reasons {
		value := 0.0
		if r == c.Reason {
			value = 1
		}
		emit.gauge(postgresContinuousArchiving, value, pg.Namespace, pg.Name, r)
	}
}

// lastBackupOfClusters is, for each PostgresCluster that a BackupJob backs
// up, the latest time one of them last succeeded.
func lastBackupOfClusters(ctx context.Context, r client.Reader) (map[types.NamespacedName]float64, error) {
	var jobs v1alpha1.BackupJobList
	if err := r.List(ctx, &jobs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list BackupJobs from the cache: %w", err)
	}
	last := map[types.NamespacedName]float64{}
	for _, bj := range jobs.Items {
		cluster := bj.Spec.Source.PostgresCluster
		if cluster == "" || bj.Status.LastSuccessfulTime == nil {
			continue
		}
		key := types.NamespacedName{Namespace: bj.Namespace, Name: cluster}
		if t := unixSeconds(*bj.Status.LastSuccessfulTime); t > last[key] {
			last[key] = t
		}
	}
	return last, nil
}
