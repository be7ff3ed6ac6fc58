package backupjob

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"example.com/platform-operator/api/v1alpha1"
)

// An event of a run's or a drill's Job, as the operator builds them,
// reconciles the BackupJob that made it: a run's end is news at once, not
// at the next scheduled check.
func TestEventsOfTheBackupJobsJobsReconcileIt(t *testing.T) {
	bj := testBackupJob()
	bj.Spec.Verify = &v1alpha1.BackupVerify{JobTemplate: bj.Spec.JobTemplate.DeepCopy()}
	b := &backup{name: testRun.name, kind: v1alpha1.VolumeBackup, scheduled: testRun.scheduled}
	want := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: bj.Namespace, Name: bj.Name}}
	for name, job := range map[string]*batchv1.Job{
		"run":   desiredRunJob(bj, testRun),
		"drill": desiredDrillJob(bj, b),
	} {
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
		(&Reconciler{}).newLoop().Owned(&batchv1.Job{}).Handler.Update(context.Background(), event.UpdateEvent{ObjectOld: job, ObjectNew: job}, q)
		if q.Len() != 1 {
			t.Errorf("%s Job: %d requests, want 1", name, q.Len())
			q.ShutDown()
			continue
		}
		if got, _ := q.Get(); got != want {
			t.Errorf("%s Job: reconciles %v, want %v", name, got, want)
		}
		q.ShutDown()
	}
}
