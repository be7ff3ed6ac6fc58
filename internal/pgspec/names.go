package pgspec

import (
	"fmt"
	"strconv"
	"strings"

	"example.com/platform-operator/api/v1alpha1"
)

// MaxInstances bounds spec.instances (the API's own maximum), and so the
// ordinals of a cluster's instances.
const MaxInstances = 9

// InstanceName is the name of the instance of ordinal n, CLUSTER-n: its
// pod, its claim and its host name.
func InstanceName(cluster string, n int) string {
	return cluster + "-" + strconv.Itoa(n)
}

// Ordinal is n of the instance CLUSTER-n, 0 for another name or an n out
// of the range an instance can have: a name read from a report or an
// annotation is not trusted to be one of ours.
func Ordinal(cluster, instance string) int {
	rest, ok := strings.CutPrefix(instance, cluster+"-")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > MaxInstances {
		return 0
	}
	return n
}

// InstanceHost is the stable DNS name of an instance, through its
// cluster's headless Service: it resolves before the instance is ready,
// which a starting replica and a backup's source need.
func InstanceHost(instance, cluster, namespace, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", instance, HeadlessService(cluster), namespace, clusterDomain)
}

// ServiceHost is the in-cluster DNS name of a Service.
func ServiceHost(service, namespace, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.svc.%s", service, namespace, clusterDomain)
}

// Names of a cluster's objects, from the cluster's name.
func HeadlessService(cluster string) string { return cluster }
func WriteService(cluster string) string    { return cluster + "-rw" }
func ReadService(cluster string) string     { return cluster + "-ro" }

// LeaseName is the primary's Lease: the operator makes it, the primary
// holds it.
func LeaseName(cluster string) string { return cluster + "-primary" }

// InstanceAccount is the ServiceAccount the instance managers run as.
func InstanceAccount(cluster string) string { return cluster + "-instance" }

// Secrets of the cluster's roles, as the operator makes them and the
// instance manager reads them.
func SuperuserSecret(cluster string) string   { return cluster + "-superuser" }
func ReplicationSecret(cluster string) string { return cluster + "-replication" }
func BackupSecret(cluster string) string      { return v1alpha1.PostgresBackupSecretName(cluster) }

// GeneratedAppSecret is the application owner's Secret the operator makes
// when the spec names none.
func GeneratedAppSecret(cluster string) string { return cluster + "-app" }

// AppSecret is the Secret of the application owner's credentials: the
// user's own when bootstrap.initdb.secretName names one.
func AppSecret(pg *v1alpha1.PostgresCluster) string {
	if b := pg.Spec.Bootstrap; b != nil && b.InitDB != nil && b.InitDB.SecretName != "" {
		return b.InitDB.SecretName
	}
	return GeneratedAppSecret(pg.Name)
}

// Wanted tells whether instance is one that pg's spec asks for, CLUSTER-1
// to CLUSTER-spec.instances: an instance above is leaving as the cluster
// scales down, and is chosen for nothing.
func Wanted(pg *v1alpha1.PostgresCluster, instance string) bool {
	n := Ordinal(pg.Name, instance)
	return n >= 1 && n <= int(pg.Spec.Instances)
}

// CASecret is the cluster's CA, which the operator makes once and signs
// the server certificate with: ca.crt and ca.key. Only the operator reads
// it; ca.crt is also in ServerSecret and the application's Secret.
func CASecret(cluster string) string { return cluster + "-ca" }

// ServerSecret is the instances' server certificate (kubernetes.io/tls:
// tls.crt, tls.key, ca.crt), which the operator renews and the instance
// managers read.
func ServerSecret(cluster string) string { return cluster + "-server" }

// Keys of CASecret and ServerSecret.
const (
	CACertKey = "ca.crt"
	CAKeyKey  = "ca.key"
)

// ServerHosts are the DNS names a server certificate of the cluster must
// cover: every instance it can have (CLUSTER-1 to CLUSTER-MaxInstances,
// short and through the headless Service), its Services in every form a
// client in the cluster writes them (short, with the namespace, with svc,
// and fully qualified), and localhost.
func ServerHosts(cluster, namespace, clusterDomain string) []string {
	var hosts []string
	for n := 1; n <= MaxInstances; n++ {
		instance := InstanceName(cluster, n)
		hosts = append(hosts, instance, InstanceHost(instance, cluster, namespace, clusterDomain))
	}
	for _, service := range []string{HeadlessService(cluster), WriteService(cluster), ReadService(cluster)} {
		long := ServiceHost(service, namespace, clusterDomain)
		hosts = append(hosts, service, service+"."+namespace, service+"."+namespace+".svc", long)
	}
	return append(hosts, "localhost")
}
