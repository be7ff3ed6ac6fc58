package postgrescluster

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
)

// Names of a cluster's objects that only the operator makes; the names
// others read are pgspec's.
func primaryBudget(pg *v1alpha1.PostgresCluster) string { return pg.Name + "-primary" }
func replicaBudget(pg *v1alpha1.PostgresCluster) string { return pg.Name + "-replicas" }

// initDB is the bootstrap's initdb with its defaults; for a cluster
// restored from a backup, the owner and database the backup holds.
func initDB(pg *v1alpha1.PostgresCluster) v1alpha1.PostgresInitDB {
	out := v1alpha1.PostgresInitDB{}
	out.Owner, out.Database = pg.Spec.Bootstrap.ApplicationOwner()
	if b := pg.Spec.Bootstrap; b != nil && b.InitDB != nil {
		out.SecretName = b.InitDB.SecretName
	}
	return out
}

// clusterLabels are the labels of every object of pg.
func clusterLabels(pg *v1alpha1.PostgresCluster) map[string]string {
	l := children.ManagedLabels()
	l[v1alpha1.PostgresClusterLabel] = pg.Name
	return l
}

// instanceLabels are the labels of an instance's pod and claim.
func instanceLabels(pg *v1alpha1.PostgresCluster, instance string) map[string]string {
	l := clusterLabels(pg)
	l[v1alpha1.PostgresInstanceLabel] = instance
	return l
}

// selectorLabels select the pods of pg (the headless Service's selector).
func selectorLabels(pg *v1alpha1.PostgresCluster) map[string]string {
	return map[string]string{v1alpha1.PostgresClusterLabel: pg.Name}
}

// objectsOf selects the operator's objects of one cluster.
func objectsOf(cluster string) labels.Selector {
	req, err := labels.NewRequirement(v1alpha1.PostgresClusterLabel, selection.Equals, []string{cluster})
	if err != nil {
		return labels.Nothing()
	}
	return children.ManagedSelector().Add(*req)
}

// clusterOf maps an object labelled for a cluster to a reconcile of it.
func clusterOf(obj client.Object) string { return obj.GetLabels()[v1alpha1.PostgresClusterLabel] }
