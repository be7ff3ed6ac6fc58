// Package pgbackuptest has the PostgresCluster fixtures of the tests of
// the backup methods and of the BackupJob controller.
package pgbackuptest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

// Replica is a ready replica that received and replayed WAL up to received.
func Replica(name, received string) v1alpha1.PostgresInstanceStatus {
	return v1alpha1.PostgresInstanceStatus{Name: name, Role: v1alpha1.PostgresReplicaRole, Ready: true, ReceivedLSN: received, ReplayedLSN: received}
}

// Cluster is PostgresCluster team/db of that many instances, its ready
// primary db-1 followed by members.
func Cluster(instances int32, members ...v1alpha1.PostgresInstanceStatus) *v1alpha1.PostgresCluster {
	return &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "team"},
		Spec:       v1alpha1.PostgresClusterSpec{Instances: instances},
		Status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1",
			Instances: append([]v1alpha1.PostgresInstanceStatus{{Name: "db-1", Role: v1alpha1.PostgresPrimaryRole, Ready: true, ReceivedLSN: "0/9000000"}}, members...)},
	}
}
