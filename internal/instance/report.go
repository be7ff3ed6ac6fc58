package instance

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// positionsInterval is how often a report whose only news is WAL
// positions is written: a database under load moves them all the time.
const positionsInterval = time.Second

// reporter writes the instance's report in its pod's annotation, when it
// changed.
type reporter struct {
	client client.Client
	pod    types.NamespacedName
	clock  clock.PassiveClock

	last   *v1alpha1.PostgresInstanceReport
	lastAt time.Time
}

// report builds the instance's report and writes it when it changed.
func (m *Manager) report(ctx context.Context, pg *v1alpha1.PostgresCluster, s instanceState, message string) {
	fencedOnPurpose := pg != nil && pgspec.FencedOnPurpose(pg, m.opts.PodName)
	r := &v1alpha1.PostgresInstanceReport{
		Fenced:  m.selfFenced.Load() || fencedOnPurpose,
		Node:    m.opts.NodeName,
		Message: message,
	}
	if pg != nil {
		r.Epoch = reportEpoch(pg.Status, m.opts.PodName, s, m.detachedUnder)
		if err := m.parametersRefused(pg); err != nil {
			r.ParametersRefused = err.Error()
		}
	}
	if m.handedOver > 0 {
		r.ShutdownLSN = m.handedOver.String()
	}
	if !s.running && s.initialized {
		// Where stopped data stands: the operator chooses the first primary
		// of a cluster made again over kept claims from it; a cold copy
		// needs to know that the data is consistent.
		if cd, err := m.pg.ControlData(ctx); err == nil {
			r.CheckpointLSN = lsnText(cd.CheckpointLSN)
			r.Timeline = int64(cd.TimelineID)
			r.SystemID = strconv.FormatUint(cd.SystemIdentifier, 10)
			r.StoppedData = v1alpha1.PostgresReplicaRole
			if s.ranAsPrimary {
				r.StoppedData = v1alpha1.PostgresPrimaryRole
			}
			if fencedOnPurpose {
				r.CleanShutdown = cd.CleanShutdown()
				// Ties the clean shutdown to the run that asked for it: a
				// report of an earlier run's fence is not this one's.
				r.BackupFence = pgspec.BackupFenceRun(pg, m.opts.PodName)
			}
		}
	}
	if s.ready {
		st := s.state
		r.SystemID = strconv.FormatUint(st.SystemIdentifier, 10)
		r.Timeline = int64(st.TimelineID)
		if st.InRecovery {
			r.Role = v1alpha1.PostgresReplicaRole
			r.Ready = s.streaming
			r.ReceivedLSN, r.ReplayedLSN = lsnText(st.ReceivedLSN), lsnText(st.ReplayedLSN)
		} else {
			r.Role = v1alpha1.PostgresPrimaryRole
			r.Ready = m.lease.held(m.clock.Now())
			r.CurrentLSN = lsnText(st.CurrentLSN)
			r.PasswordVersion = m.applied[appRoleKey]
			if pg != nil && pg.Spec.Backup != nil {
				r.Archiving = m.archivingReport(ctx)
			}
			for _, sb := range st.Standbys {
				if sb.State == "streaming" {
					r.Standbys = append(r.Standbys, sb.ApplicationName)
				}
			}
		}
	}
	if err := m.reporter.send(ctx, r); err != nil {
		m.log.V(1).Info("Report not written", "error", err.Error())
		return
	}
	m.markAPI()
}

// reportEpoch is the promotion epoch a report is made under: the
// cluster's, except during an election while this instance, a running
// standby, may still take WAL from the former primary (it has not detached
// under the election's epoch, or its WAL receiver still runs): the
// positions it would report are not yet where its WAL ends, and the
// election must not count them.
func reportEpoch(st v1alpha1.PostgresClusterStatus, me string, s instanceState, detachedUnder int64) int64 {
	election := st.TargetPrimary == "" && st.CurrentPrimary != "" && st.CurrentPrimary != me
	if election && s.running && (!s.ready || s.state.InRecovery) && (detachedUnder != st.PromotionEpoch || s.receiving) {
		return st.PromotionEpoch - 1
	}
	return st.PromotionEpoch
}

// send writes r when it differs from the last report written: at once
// when more than the WAL positions changed, else at most once per
// positionsInterval.
func (r *reporter) send(ctx context.Context, report *v1alpha1.PostgresInstanceReport) error {
	now := r.clock.Now()
	if r.last != nil {
		if equality.Semantic.DeepEqual(r.last, report) {
			return nil
		}
		if equality.Semantic.DeepEqual(withoutPositions(r.last), withoutPositions(report)) && now.Sub(r.lastAt) < positionsInterval {
			return nil
		}
	}
	data, err := json.Marshal(report)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.PostgresReportAnnotation: string(data),
	}}})
	if err != nil {
		return err
	}
	writeCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = r.pod.Namespace, r.pod.Name
	if err := r.client.Patch(writeCtx, pod, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("write the report on pod %s: %w", r.pod.Name, err)
	}
	r.last, r.lastAt = report, now
	return nil
}

func withoutPositions(r *v1alpha1.PostgresInstanceReport) v1alpha1.PostgresInstanceReport {
	out := *r
	out.CurrentLSN, out.ReceivedLSN, out.ReplayedLSN = "", "", ""
	return out
}

// handoverOf is the shutdown position that instance reported when it
// stepped down; 0 when it reported none.
func (r *reporter) handoverOf(ctx context.Context, instance string) postgres.LSN {
	pod := &corev1.Pod{}
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.client.Get(readCtx, types.NamespacedName{Namespace: r.pod.Namespace, Name: instance}, pod); err != nil {
		return 0
	}
	report := &v1alpha1.PostgresInstanceReport{}
	if err := json.Unmarshal([]byte(pod.Annotations[v1alpha1.PostgresReportAnnotation]), report); err != nil || report.ShutdownLSN == "" {
		return 0
	}
	lsn, err := postgres.ParseLSN(report.ShutdownLSN)
	if err != nil {
		return 0
	}
	return lsn
}

func lsnText(l postgres.LSN) string {
	if l == 0 {
		return ""
	}
	return l.String()
}
