package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PostgresBackupSecretName is the Secret of a PostgresCluster's backup
// role (streaming_backup: replication only), whose username and password
// a BackupJob's base backup Job streams with. The operator generates it
// once; a person may change its password, which the primary then sets.
func PostgresBackupSecretName(cluster string) string { return cluster + "-backup" }

// Labels, annotations and finalizers of a PostgresCluster's objects that
// people and tools read.
const (
	// PostgresClusterLabel names the PostgresCluster of an object: its
	// pods, claims, Services and Secrets.
	// `kubectl get pvc -l example.com/postgrescluster=NAME` lists its
	// claims, also after the PostgresCluster was deleted.
	PostgresClusterLabel = "example.com/postgrescluster"

	// PostgresClientLabel, on a pod of the cluster's namespace, set to the
	// cluster's name, lets the pod reach its PostgreSQL through the
	// cluster's NetworkPolicy (spec.networkPolicy).
	PostgresClientLabel = "example.com/postgrescluster-client"

	// PostgresInstanceLabel names the instance of a pod or claim,
	// CLUSTER-N.
	PostgresInstanceLabel = "example.com/instance"

	// PostgresRoleLabel, on a pod, is the instance's role as the operator
	// routes to it: primary (selected by the CLUSTER-rw Service) or replica
	// (by CLUSTER-ro). A pod without it receives no application traffic:
	// it is starting, failing, fenced, or the primary during a failover.
	PostgresRoleLabel = "example.com/role"

	// PostgresReportAnnotation, on a pod, is the report of its instance
	// manager as JSON (PostgresInstanceReport): the only channel from the
	// databases to the operator, through the API server.
	PostgresReportAnnotation = "example.com/instance-report"

	// PostgresConfirmDeleteAnnotation, set to the PostgresCluster's own
	// name, confirms deletionPolicy Delete: only then does deleting the
	// PostgresCluster delete its claims.
	PostgresConfirmDeleteAnnotation = "example.com/confirm-delete"

	// PostgresFailoverWithoutQuorumAnnotation, on a PostgresCluster, set to
	// the name of the primary that failed (status.currentPrimary), lets a
	// failover that waits for a quorum of synchronous standbys promote the
	// most advanced of those that report: commits that only the lost
	// instances held are lost. A person's decision, never the operator's;
	// it applies to that primary's failure only.
	PostgresFailoverWithoutQuorumAnnotation = "example.com/failover-without-quorum"
	// PostgresRestartedAtAnnotation, set on a PostgresCluster (as
	// kubectl rollout restart sets it on a workload's template, and
	// kubectl platform pg restart NAME does), asks for a rolling restart:
	// each new value makes every instance's pod be replaced in the order
	// of an update, replicas first, the primary after a switchover.
	PostgresRestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

	// PostgresAdoptKeptClaimsAnnotation, on a PostgresCluster, set to its
	// own name, lets it take the claims of its instances' names that an
	// earlier PostgresCluster of the name kept (deletionPolicy Retain), with
	// their data. Without it such a cluster starts no instance, reason
	// KeptClaims. Admission lets only who may update claims in the namespace
	// set it.
	PostgresAdoptKeptClaimsAnnotation = "example.com/adopt-kept-claims"

	// PostgresClusterUIDAnnotation, on a claim, is the UID of the
	// PostgresCluster it was made for or adopted by: a claim of another is
	// kept from an earlier cluster of the name.
	PostgresClusterUIDAnnotation = "example.com/postgrescluster-uid"

	// PostgresFinalizer is put on a PostgresCluster whose deletionPolicy is
	// Delete, so that its deletion deletes its claims first.
	PostgresFinalizer = "example.com/postgrescluster-claims"

	// PostgresBackupFenceAnnotation, on a PostgresCluster, names the
	// instance that a BackupJob's run fences for a cold snapshot: its
	// PostgreSQL stops cleanly, it is never promoted, and it starts again
	// when the annotation goes. PostgresBackupFenceByAnnotation names the
	// run (BACKUPJOB-UNIXTIME, also its VolumeSnapshot's name),
	// PostgresBackupFenceSinceAnnotation when the fence was set (RFC 3339),
	// from which the run's deadline counts, and
	// PostgresBackupFenceRunNowAnnotation the BackupJob's spec.runNow value
	// that asked for the run, if one did. The BackupJob controller sets and
	// removes them; status.instances[] tells where the fence stands
	// (fenced, backupFence, cleanShutdown).
	PostgresBackupFenceAnnotation       = "example.com/backup-fence"
	PostgresBackupFenceByAnnotation     = "example.com/backup-fence-by"
	PostgresBackupFenceSinceAnnotation  = "example.com/backup-fence-since"
	PostgresBackupFenceRunNowAnnotation = "example.com/backup-fence-run-now"
)

// Roles of an instance.
const (
	PostgresPrimaryRole = "primary"
	PostgresReplicaRole = "replica"
)

// PostgresDeletionPolicy says what deleting a PostgresCluster does to the
// claims that hold its data.
// +kubebuilder:validation:Enum=Retain;Delete
type PostgresDeletionPolicy string

const (
	// RetainClaims keeps every claim, labelled with the cluster's name.
	RetainClaims PostgresDeletionPolicy = "Retain"
	// DeleteClaims deletes them, once the confirmation annotation is set.
	DeleteClaims PostgresDeletionPolicy = "Delete"
)

// PostgresDataDurability says whether commits wait for spec.synchronous
// standbys when fewer stream.
// +kubebuilder:validation:Enum=required;preferred
type PostgresDataDurability string

const (
	// DurabilityRequired: every commit waits for spec.synchronous standbys
	// to confirm it, also while fewer stream (writes stop meanwhile).
	DurabilityRequired PostgresDataDurability = "required"
	// DurabilityPreferred: commits wait only for the standbys that stream,
	// up to spec.synchronous of them, and for none while none streams.
	DurabilityPreferred PostgresDataDurability = "preferred"
)

// PostgresStorage is the volume of each instance.
type PostgresStorage struct {
	// size of each instance's claim, such as 10Gi. It may grow (the claims
	// are expanded in place, where the StorageClass allows it) but never
	// shrink.
	// +required
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('16Mi')) >= 0",message="storage.size must be at least 16Mi"
	Size resource.Quantity `json:"size"`

	// storageClassName is the StorageClass of the claims; the cluster's
	// default when unset. It cannot change.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storage.storageClassName cannot change: the data lives on the claims it made"
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// PostgresInitDB creates a new database.
type PostgresInitDB struct {
	// database is the application database's name.
	// +optional
	// +kubebuilder:default=app
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	Database string `json:"database,omitempty"`

	// owner is the role that owns it, the application's user.
	// +optional
	// +kubebuilder:default=app
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['postgres', 'streaming_replica', 'streaming_backup']) && !self.startsWith('pg_')",message="owner cannot be postgres, streaming_replica, streaming_backup or a pg_ role: the operator owns them"
	Owner string `json:"owner,omitempty"`

	// secretName names a Secret of the cluster's namespace, of type
	// kubernetes.io/basic-auth or Opaque, whose username and password keys
	// are the owner's credentials, instead of the Secret CLUSTER-app the
	// operator generates. Its username must be owner.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	SecretName string `json:"secretName,omitempty"`
}

// PostgresObjectStore is an S3-compatible bucket and a path in it.
type PostgresObjectStore struct {
	// endpoint is the store's S3 URL, http:// or https://HOST[:PORT].
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s/]+/?$`
	Endpoint string `json:"endpoint"`

	// bucket holds the archive; it is made when missing.
	// +required
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket"`

	// path is the folder of this cluster's WAL and base backups in the
	// bucket; unset, NAMESPACE/CLUSTER. A cluster archives only into a
	// path that holds no WAL yet.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`
	Path string `json:"path,omitempty"`

	// region requests are signed for; us-east-1 unless set.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Region string `json:"region,omitempty"`

	// credentialsSecret names a Secret of the cluster's namespace with the
	// keys accessKeyId and secretAccessKey. The instances read it when
	// their pods start: a changed key reaches them as they restart.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecret string `json:"credentialsSecret"`

	// caSecret names a Secret of the cluster's namespace whose key ca.crt
	// is the PEM bundle trusted for an https endpoint, besides the
	// system's roots.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CASecret string `json:"caSecret,omitempty"`

	// compression of WAL and base backups: gzip (the default) or none.
	// +optional
	// +kubebuilder:default=gzip
	// +kubebuilder:validation:Enum=gzip;none
	Compression string `json:"compression,omitempty"`
}

// Keys of the Secret of PostgresObjectStore.credentialsSecret and caSecret.
const (
	ObjectStoreAccessKeyIDKey     = "accessKeyId"
	ObjectStoreSecretAccessKeyKey = "secretAccessKey"
	ObjectStoreCAKey              = "ca.crt"
)

// PostgresBackupSpec is the cluster's continuous backup.
type PostgresBackupSpec struct {
	// objectStore is where the primary archives every WAL file as it
	// fills (continuous archiving), and where BackupJobs with target
	// objectStore put base backups: with both, the cluster can be restored
	// to any moment since its oldest base backup.
	// +required
	ObjectStore PostgresObjectStore `json:"objectStore"`

	// archiveTimeout bounds how long a committed transaction waits to be
	// archived on an idle cluster: a WAL file is switched and archived at
	// least this often while anything is written. Shorter loses less with
	// the whole cluster, and stores more (each file is 16 MB before
	// compression). 5m unless set.
	// +optional
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="archiveTimeout must be between 10s and 24h"
	ArchiveTimeout *metav1.Duration `json:"archiveTimeout,omitempty"`

	// retention is the recovery window, such as 30d: base backups and WAL
	// that no moment of the last 30 days needs are deleted from the store
	// by the primary, never the newest base backup nor the WAL after it.
	// Units m, h, d or w. Unset, nothing is deleted.
	// +optional
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]{0,4}[mhdw]$`
	Retention string `json:"retention,omitempty"`
}

// PostgresTLSStatus is the server certificate the instances are given.
type PostgresTLSStatus struct {
	// issuer is the common name of the CA that signed it: the cluster's
	// name for the operator's own CA, the user's CA's with spec.tls.
	// +optional
	Issuer string `json:"issuer,omitempty"`
	// notAfter is when it ends. The operator renews its own a third of its
	// life before; one the user brings is the user's to renew.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
}

// PostgresTLS is a server certificate the user brings.
type PostgresTLS struct {
	// serverCertSecret names a Secret in the cluster's namespace in
	// cert-manager's format (tls.crt, tls.key, ca.crt), whose certificate
	// every instance serves instead of one the operator issues. Its names
	// must cover each instance's host (CLUSTER-N.CLUSTER.NAMESPACE.svc.
	// DOMAIN: the instances verify each other with it) and the rw and ro
	// Services' (CLUSTER-rw.NAMESPACE.svc.DOMAIN), a wildcard will do;
	// ca.crt is the CA that the instances and the application Secret's
	// ca.crt verify it with. The operator copies it into CLUSTER-server,
	// checked, at once when this field changes and within five minutes when
	// the Secret does (cert-manager renews a certificate long before it
	// ends); a Secret that is missing or fails the check is reported
	// (Degraded, SecretMissing or CertificateInvalid), read again every 15
	// seconds, and not served meanwhile. Setting it takes the right to read
	// the Secret: the instances, which run the cluster's image, are given
	// its key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ServerCertSecret string `json:"serverCertSecret"`
}

// PostgresFromBackup restores the cluster from a BackupJob's backup of
// another PostgresCluster.
//
// +kubebuilder:validation:XValidation:rule="has(self.backupJob) != has(self.objectStore)",message="fromBackup takes backupJob or objectStore, one of them"
// +kubebuilder:validation:XValidation:rule="[has(self.targetTime), has(self.targetLSN), has(self.targetName)].filter(x, x).size() <= 1",message="set at most one of targetTime, targetLSN and targetName"
// +kubebuilder:validation:XValidation:rule="has(self.objectStore) || !(has(self.targetTime) || has(self.targetLSN) || has(self.targetName))",message="a recovery target needs objectStore: the WAL to replay comes from its archive"
type PostgresFromBackup struct {
	// backupJob names the BackupJob, in the cluster's namespace, whose
	// volume backup (snapshot or base backup claim) to restore.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=52
	BackupJob string `json:"backupJob,omitempty"`

	// objectStore restores from a cluster's archive in an object store: a
	// base backup and the WAL archived after it. Its path is required:
	// that of the cluster backed up (NAMESPACE/CLUSTER unless it set
	// another), which need not exist any more.
	// +optional
	// +kubebuilder:validation:XValidation:rule="has(self.path)",message="objectStore.path is required in fromBackup: the path of the cluster to restore, such as NAMESPACE/CLUSTER"
	ObjectStore *PostgresObjectStore `json:"objectStore,omitempty"`

	// targetTime (RFC 3339) stops the recovery at the last transaction
	// committed at or before it; unset, with no other target, recovery
	// replays the whole archive.
	// +optional
	TargetTime *metav1.Time `json:"targetTime,omitempty"`

	// targetLSN stops it at a WAL position, such as 0/3000060.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$`
	TargetLSN string `json:"targetLSN,omitempty"`

	// targetName stops it at a restore point made with
	// pg_create_restore_point('NAME').
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetName string `json:"targetName,omitempty"`

	// name is the backup's (its VolumeSnapshot's or claim's); unset, the
	// newest successful backup of the BackupJob. With objectStore it is a
	// base backup's in the store (the name of the BackupJob run that took
	// it), restored in place of the one the target would choose: it must
	// be consistent before the target.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name,omitempty"`

	// database and owner are the application database and its owner in
	// the backup: those of the backed-up cluster's bootstrap.initdb. The
	// restored cluster's CLUSTER-app Secret names them, with a new password
	// that the primary sets for the owner.
	// +optional
	// +kubebuilder:default=app
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	Database string `json:"database,omitempty"`

	// +optional
	// +kubebuilder:default=app
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['postgres', 'streaming_replica', 'streaming_backup']) && !self.startsWith('pg_')",message="owner cannot be postgres, streaming_replica, streaming_backup or a pg_ role: the operator owns them"
	Owner string `json:"owner,omitempty"`
}

// ApplicationOwner is the application's role and database of a cluster
// bootstrapped by b (nil: the defaults): initdb's, or those fromBackup says
// the backup holds; app and app unless set.
func (b *PostgresBootstrap) ApplicationOwner() (role, database string) {
	role, database = "app", "app"
	var r, d string
	switch {
	case b == nil:
	case b.InitDB != nil:
		r, d = b.InitDB.Owner, b.InitDB.Database
	case b.FromBackup != nil:
		r, d = b.FromBackup.Owner, b.FromBackup.Database
	}
	if r != "" {
		role = r
	}
	if d != "" {
		database = d
	}
	return role, database
}

// PostgresBootstrap says how the cluster's first instance gets its data:
// initdb or fromBackup, not both.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.initdb) && has(self.fromBackup))",message="bootstrap takes initdb or fromBackup, not both"
type PostgresBootstrap struct {
	// initdb creates a new, empty database (the default).
	// +optional
	InitDB *PostgresInitDB `json:"initdb,omitempty"`

	// fromBackup starts the first instance from a backup of another
	// PostgresCluster, made by a BackupJob whose source is that cluster;
	// the other instances clone it. The database keeps the backup's roles
	// and data; the new cluster's Secrets set the passwords.
	// +optional
	FromBackup *PostgresFromBackup `json:"fromBackup,omitempty"`
}

// PostgresClusterSpec is the desired state of a PostgresCluster.
//
// +kubebuilder:validation:XValidation:rule="self.synchronous < self.instances",message="synchronous must be less than instances: each synchronous standby is another instance",fieldPath=".synchronous"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="spec.bootstrap cannot be added or removed once the cluster exists: its data, roles and owner came from it",fieldPath=".bootstrap"
type PostgresClusterSpec struct {
	// instances is the number of PostgreSQL instances: one primary and
	// instances - 1 streaming replicas, each a pod with a claim of its own.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Instances int32 `json:"instances,omitempty"`

	// image is a stock PostgreSQL 15 image. The operator's own binary is
	// put into each pod by an init container and runs as its first
	// process, so no image of the operator's making is needed.
	// +optional
	// +kubebuilder:default="postgres:15"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[^\s"']+$`
	Image string `json:"image,omitempty"`

	// storage is each instance's volume.
	// +required
	Storage PostgresStorage `json:"storage"`

	// resources of the PostgreSQL container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// parameters are postgresql.conf settings. Those the operator owns
	// (ports, addresses, replication, WAL archiving, recovery, paths, TLS)
	// are refused: the PostgresCluster then reports InvalidSpec, naming
	// them, and its running instances keep their configuration.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Parameters map[string]string `json:"parameters,omitempty"`

	// bootstrap says how the first instance gets its data: initdb (the
	// default) creates an empty database. It cannot change.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bootstrap cannot change once the cluster exists"
	Bootstrap *PostgresBootstrap `json:"bootstrap,omitempty"`

	// backup is the cluster's continuous backup: WAL archiving to an
	// object store, the base of point-in-time recovery.
	// +optional
	Backup *PostgresBackupSpec `json:"backup,omitempty"`

	// tls brings the cluster's server certificate from elsewhere (a PKI of
	// the user's, cert-manager). Unset, the operator issues one from a CA
	// it makes for the cluster and renews it before it ends.
	// +optional
	TLS *PostgresTLS `json:"tls,omitempty"`

	// superuserAccess, when true, lets the superuser postgres log in over
	// the network with the password of the Secret CLUSTER-superuser. Off by
	// default: the application's owner needs no superuser, and the operator
	// reaches each instance through its own socket.
	// +optional
	SuperuserAccess bool `json:"superuserAccess,omitempty"`

	// failoverDelay is how many seconds a primary that does not answer, or
	// whose PostgreSQL is down, is waited for before a replica is promoted.
	// A primary whose pod is deleted, or which is cut off so that its lease
	// lapses, fails over without this delay beyond the lease's.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	FailoverDelay int32 `json:"failoverDelay,omitempty"`

	// maxLagOnFailover bounds how far behind the primary's last reported
	// WAL position (status.lastPrimaryLSN) a replica may be for a failover
	// to promote it, as Patroni's maximum_lag_on_failover: such as 16Mi.
	// With none within it the cluster waits, Degraded ReplicasTooFarBehind,
	// for the former primary or a replica that catches up, or a person's
	// annotation example.com/failover-without-quorum. It matters with
	// synchronous 0: with synchronous standbys the failover quorum already
	// keeps every acknowledged commit. Unset, no bound.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('0')) >= 0",message="maxLagOnFailover must be a size of 0 or more, such as 16Mi"
	MaxLagOnFailover *resource.Quantity `json:"maxLagOnFailover,omitempty"`

	// primary, set to an instance's name (CLUSTER-N), switches the primary
	// over to it: the current primary stops cleanly after its replicas
	// received all its WAL, then the named one is promoted. Unset, the
	// operator keeps the primary it has.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Primary string `json:"primary,omitempty"`

	// fencedInstances are instances (CLUSTER-N) whose PostgreSQL is
	// stopped, their pods and data kept: for inspection or a cold copy. A
	// fenced primary is not failed over: writes stop until it is unfenced.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=9
	// +kubebuilder:validation:items:MaxLength=63
	FencedInstances []string `json:"fencedInstances,omitempty"`

	// hibernate, when true, deletes every pod and keeps the claims: the
	// cluster comes back with its data, and its primary, when it is false
	// again.
	// +optional
	Hibernate bool `json:"hibernate,omitempty"`

	// synchronous is the number of replicas that must confirm each commit
	// before it returns (ANY n of them). With 1 or more a failover never
	// loses a committed transaction; while fewer replicas run, commits
	// wait.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8
	Synchronous int32 `json:"synchronous,omitempty"`

	// dataDurability, with synchronous 1 or more, says what commits do
	// while fewer standbys stream than synchronous asks (one is down,
	// fenced for a backup, being cloned): required (the default) makes
	// them wait, so that none is confirmed by fewer; preferred lets them
	// be confirmed by those that stream, and by none while none does, so
	// that writes go on. A failover after such a commit may lose it, as
	// with synchronous 0; the failover quorum still counts every standby.
	// +optional
	// +kubebuilder:default=required
	DataDurability PostgresDataDurability `json:"dataDurability,omitempty"`

	// networkPolicy is the NetworkPolicy the operator makes for the
	// cluster's pods, on by default: PostgreSQL's port is reachable only
	// from the cluster's own instances, its backup and drill Jobs, pods of
	// the namespace labelled example.com/postgrescluster-client=CLUSTER,
	// and the peers allowedClients names. A cluster whose network plugin
	// enforces no NetworkPolicy ignores it.
	// +optional
	NetworkPolicy *PostgresNetworkPolicy `json:"networkPolicy,omitempty"`

	// deletionPolicy says what deleting the PostgresCluster does to its
	// claims: Retain (the default) keeps them, labelled with its name;
	// Delete deletes them, only when the annotation
	// example.com/confirm-delete is set to the PostgresCluster's name.
	// +optional
	// +kubebuilder:default=Retain
	DeletionPolicy PostgresDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// PostgresNetworkPolicy is spec.networkPolicy.
type PostgresNetworkPolicy struct {
	// enabled makes the NetworkPolicy CLUSTER (the default); false deletes
	// it, and PostgreSQL's port is as open as the namespace's other
	// policies leave it.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// allowedClients are more sources that may reach PostgreSQL's port:
	// pods of other namespaces (namespaceSelector with podSelector), or
	// address ranges (ipBlock), as a NetworkPolicy's ingress peers.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	AllowedClients []networkingv1.NetworkPolicyPeer `json:"allowedClients,omitempty"`
}

// NetworkPolicyEnabled tells whether the cluster's NetworkPolicy is wanted:
// unless spec.networkPolicy.enabled says false.
func (s PostgresClusterSpec) NetworkPolicyEnabled() bool {
	return s.NetworkPolicy == nil || s.NetworkPolicy.Enabled == nil || *s.NetworkPolicy.Enabled
}

// PostgresInstanceStatus is what the operator last learned of one instance.
type PostgresInstanceStatus struct {
	// name is the instance's, CLUSTER-N, also that of its pod and claim.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// role is primary or replica as the instance reports it, empty when it
	// has not reported.
	// +optional
	// +kubebuilder:validation:MaxLength=16
	Role string `json:"role,omitempty"`

	// ready is true when PostgreSQL accepts connections on the instance
	// and, for a replica, streams from the primary.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// fenced is true when the instance's PostgreSQL is stopped on purpose
	// (spec.fencedInstances, a BackupJob's run, or the instance fenced
	// itself cut off from the others).
	// +optional
	Fenced bool `json:"fenced,omitempty"`

	// backupFence is the BackupJob's run (annotation
	// example.com/backup-fence-by) that the instance has stopped its
	// PostgreSQL for; cleanShutdown and checkpointLSN are then that stop's.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	BackupFence string `json:"backupFence,omitempty"`

	// cleanShutdown is true when the instance, fenced, reports that its
	// PostgreSQL stopped cleanly: its claim holds a consistent copy of the
	// database, which a snapshot may take.
	// +optional
	CleanShutdown bool `json:"cleanShutdown,omitempty"`

	// checkpointLSN is, with cleanShutdown, the position of the checkpoint
	// of that clean shutdown.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	CheckpointLSN string `json:"checkpointLSN,omitempty"`

	// timeline is the PostgreSQL timeline the instance is on.
	// +optional
	Timeline int64 `json:"timeline,omitempty"`

	// receivedLSN is, for a replica, the last WAL position it received; for
	// the primary, its current WAL position.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ReceivedLSN string `json:"receivedLSN,omitempty"`

	// replayedLSN is the last WAL position the instance replayed.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	ReplayedLSN string `json:"replayedLSN,omitempty"`

	// lagBytes is how far a replica's replay is behind the primary's
	// current position as last reported.
	// +optional
	LagBytes int64 `json:"lagBytes,omitempty"`

	// message says what the instance is doing or why it is not ready.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// PostgresAbandonedSwitchover is a switchover the operator gave up.
type PostgresAbandonedSwitchover struct {
	// target is the instance that did not promote in time.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Target string `json:"target"`

	// retryAfter is when a switchover to target may be tried again.
	// +required
	RetryAfter metav1.Time `json:"retryAfter"`
}

// PostgresClusterPhase is what the cluster as a whole is doing.
type PostgresClusterPhase string

const (
	PostgresInitializing  PostgresClusterPhase = "Initializing"
	PostgresHealthy       PostgresClusterPhase = "Healthy"
	PostgresFailingOver   PostgresClusterPhase = "FailingOver"
	PostgresSwitchingOver PostgresClusterPhase = "SwitchingOver"
	PostgresUpgrading     PostgresClusterPhase = "Upgrading"
	PostgresHibernated    PostgresClusterPhase = "Hibernated"
	PostgresDegraded      PostgresClusterPhase = "Degraded"
	PostgresDeleting      PostgresClusterPhase = "Deleting"
)

// PostgresCredentialsStatus tells which Secrets hold the credentials and
// whether the database uses them.
type PostgresCredentialsStatus struct {
	// appSecret holds the application owner's credentials and connection
	// strings.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	AppSecret string `json:"appSecret,omitempty"`

	// superuserSecret holds the superuser's.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SuperuserSecret string `json:"superuserSecret,omitempty"`

	// appliedVersion is the resourceVersion of appSecret whose password the
	// primary set in the database; it lags behind the Secret for a moment
	// after a change.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	AppliedVersion string `json:"appliedVersion,omitempty"`
}

// PostgresArchivingStatus is where continuous archiving stands, as the
// primary reports it.
type PostgresArchivingStatus struct {
	// lastArchivedWAL is the last WAL file the store confirmed, and
	// lastArchivedAt when.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastArchivedWAL string `json:"lastArchivedWAL,omitempty"`
	// +optional
	LastArchivedAt *metav1.Time `json:"lastArchivedAt,omitempty"`

	// lastFailedWAL is the last WAL file whose archiving failed, at
	// lastFailedAt, for lastFailure; kept after archiving recovers.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	LastFailedWAL string `json:"lastFailedWAL,omitempty"`
	// +optional
	LastFailedAt *metav1.Time `json:"lastFailedAt,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	LastFailure string `json:"lastFailure,omitempty"`

	// pendingWAL counts the WAL files written but not yet archived, which
	// the primary keeps on its volume until they are.
	// +optional
	PendingWAL int64 `json:"pendingWAL,omitempty"`

	// firstRecoverabilityPoint is the earliest moment the store can
	// restore the cluster to (its oldest base backup's end), and
	// lastSuccessfulBackup when its newest base backup ended; baseBackups
	// counts them. The primary reads them from the store every minute.
	// +optional
	FirstRecoverabilityPoint *metav1.Time `json:"firstRecoverabilityPoint,omitempty"`
	// +optional
	LastSuccessfulBackup *metav1.Time `json:"lastSuccessfulBackup,omitempty"`
	// +optional
	BaseBackups int32 `json:"baseBackups,omitempty"`
}

// PostgresClusterStatus is what the operator last observed of a
// PostgresCluster.
type PostgresClusterStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the cluster serves reads and writes as specified),
	// PrimaryAvailable (a primary accepts writes through CLUSTER-rw),
	// ReplicasReady (every replica streams), Degraded (something needs a
	// person).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// phase is what the cluster as a whole is doing.
	// +optional
	Phase PostgresClusterPhase `json:"phase,omitempty"`

	// readyInstances is ready/desired, as kubectl get shows it.
	// +optional
	// +kubebuilder:validation:MaxLength=8
	ReadyInstances string `json:"readyInstances,omitempty"`

	// currentPrimary is the instance that is primary now.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	CurrentPrimary string `json:"currentPrimary,omitempty"`

	// targetPrimary is the instance the operator wants as primary: the
	// current one, or, during a failover or switchover, the one being
	// promoted. Only the target may take the primary's lease and promote.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	TargetPrimary string `json:"targetPrimary,omitempty"`

	// promotionEpoch counts the changes of targetPrimary. Instance managers
	// report with the epoch they saw, so that a failover chooses among
	// reports made after it began.
	// +optional
	PromotionEpoch int64 `json:"promotionEpoch,omitempty"`

	// failingSince is when the current primary was first seen failing,
	// while failoverDelay runs.
	// +optional
	FailingSince *metav1.Time `json:"failingSince,omitempty"`

	// electionStartedAt is when a failover began to choose among the
	// replicas' reports; unset while targetPrimary names an instance.
	// +optional
	ElectionStartedAt *metav1.Time `json:"electionStartedAt,omitempty"`

	// switchoverStartedAt is when the switchover to targetPrimary began; a
	// switchover whose target has not promoted within 60 s is abandoned,
	// and the former primary starts again.
	// +optional
	SwitchoverStartedAt *metav1.Time `json:"switchoverStartedAt,omitempty"`

	// abandonedSwitchover is the last switchover given up. Its target is
	// not chosen again (by spec.primary or for a drain) before retryAfter:
	// each try stops writes for up to a minute.
	// +optional
	AbandonedSwitchover *PostgresAbandonedSwitchover `json:"abandonedSwitchover,omitempty"`

	// lastPrimaryLSN is the WAL position the primary last reported, kept
	// once it stops reporting: a failover measures the replicas' lag with
	// it (spec.maxLagOnFailover).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	LastPrimaryLSN string `json:"lastPrimaryLSN,omitempty"`

	// systemID is the database system identifier of the cluster's data,
	// from its first primary: an instance reporting another is not of this
	// cluster and is never promoted.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	SystemID string `json:"systemID,omitempty"`

	// instances are the instances as last reported, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=9
	Instances []PostgresInstanceStatus `json:"instances,omitempty"`

	// credentials tell which Secrets to use.
	// +optional
	Credentials PostgresCredentialsStatus `json:"credentials,omitempty"`

	// archiving is where continuous archiving stands, with
	// spec.backup.objectStore.
	// +optional
	Archiving *PostgresArchivingStatus `json:"archiving,omitempty"`

	// tls is the server certificate the instances are given
	// (CLUSTER-server's).
	// +optional
	TLS *PostgresTLSStatus `json:"tls,omitempty"`

	// writeService and readService are the Services applications connect
	// to: CLUSTER-rw reaches the primary, CLUSTER-ro the replicas.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	WriteService string `json:"writeService,omitempty"`
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ReadService string `json:"readService,omitempty"`
}

// PostgresCluster runs a real PostgreSQL: a primary and streaming replicas,
// each a pet (a pod and a claim of its own, named CLUSTER-N, reachable by a
// stable DNS name through the headless Service CLUSTER), with CLUSTER-rw
// for writes and CLUSTER-ro for reads. The operator decides which instance
// is primary; an instance manager in each pod runs PostgreSQL and acts on
// that decision, promoting only while it holds the primary's lease.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=pg,categories={all,database}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Instances",type=string,JSONPath=`.status.readyInstances`
// +kubebuilder:printcolumn:name="Primary",type=string,JSONPath=`.status.currentPrimary`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Archive",type=string,JSONPath=`.status.conditions[?(@.type=="ContinuousArchiving")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Status",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 50 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be at most 50 characters of lower-case letters, digits and '-', starting with a letter: it names the instances' pods and DNS names, CLUSTER-N"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.primary) || self.spec.primary.size() == 0 || (self.spec.primary.startsWith(self.metadata.name + '-') && self.spec.primary.substring(self.metadata.name.size() + 1).matches('^[1-9]$') && int(self.spec.primary.substring(self.metadata.name.size() + 1)) <= self.spec.instances)",message="spec.primary must name one of the instances, CLUSTER-1 to CLUSTER-<instances>",fieldPath=".spec.primary"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.fencedInstances) || self.spec.fencedInstances.all(i, i.startsWith(self.metadata.name + '-') && i.substring(self.metadata.name.size() + 1).matches('^[1-9]$'))",message="spec.fencedInstances must name instances of the cluster, CLUSTER-1 to CLUSTER-9",fieldPath=".spec.fencedInstances"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec) || !has(oldSelf.spec.storage) || !isQuantity(string(oldSelf.spec.storage.size)) || quantity(string(self.spec.storage.size)).compareTo(quantity(string(oldSelf.spec.storage.size))) >= 0",message="spec.storage.size cannot shrink: a volume can only grow",fieldPath=".spec.storage.size"
type PostgresCluster struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the PostgresCluster.
	// +required
	Spec PostgresClusterSpec `json:"spec"`

	// status is the observed state, written by the operator.
	// +optional
	Status PostgresClusterStatus `json:"status,omitempty"`
}

// PostgresClusterList is a list of PostgresClusters.
//
// +kubebuilder:object:root=true
type PostgresClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PostgresCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PostgresCluster{}, &PostgresClusterList{})
}

// PostgresInstanceReport is what an instance manager reports of its
// instance, as JSON in its pod's annotation PostgresReportAnnotation. It
// writes it when something in it changes, LSNs at most about once a
// second, and at once when it sees a new promotionEpoch.
type PostgresInstanceReport struct {
	// role is primary or replica as PostgreSQL says (pg_is_in_recovery),
	// empty while PostgreSQL is not running.
	Role string `json:"role,omitempty"`
	// ready is true when PostgreSQL accepts connections and, for a
	// replica, streams from the primary.
	Ready bool `json:"ready,omitempty"`
	// fenced is true when the instance manager stopped PostgreSQL on
	// purpose: spec.fencedInstances, or cut off without its lease.
	Fenced bool `json:"fenced,omitempty"`
	// timeline, currentLSN (a primary's), receivedLSN and replayedLSN (a
	// replica's) locate the instance in the cluster's history.
	Timeline    int64  `json:"timeline,omitempty"`
	CurrentLSN  string `json:"currentLSN,omitempty"`
	ReceivedLSN string `json:"receivedLSN,omitempty"`
	ReplayedLSN string `json:"replayedLSN,omitempty"`
	// shutdownLSN is the position of the clean shutdown of a primary that
	// stepped down for a switchover: its successor promotes only once it
	// has received that much.
	ShutdownLSN string `json:"shutdownLSN,omitempty"`
	// systemID is the database system identifier: instances of one cluster
	// share it.
	SystemID string `json:"systemID,omitempty"`
	// standbys are the instances streaming from a primary.
	Standbys []string `json:"standbys,omitempty"`
	// node is the node the instance's pod runs on.
	Node string `json:"node,omitempty"`
	// epoch is the status.promotionEpoch the report was made under.
	Epoch int64 `json:"epoch,omitempty"`
	// passwordVersion is the resourceVersion of the application Secret
	// whose password a primary set in the database.
	PasswordVersion string `json:"passwordVersion,omitempty"`
	// cleanShutdown is true when a fenced instance's PostgreSQL stopped
	// cleanly: its data directory is consistent, a cold copy of it a
	// backup; checkpointLSN is the position it stopped at.
	CleanShutdown bool   `json:"cleanShutdown,omitempty"`
	CheckpointLSN string `json:"checkpointLSN,omitempty"`
	// stoppedData, for an instance whose PostgreSQL is not running but
	// whose data directory holds a database, is what that data is: primary
	// (it ran as one and is not configured as a standby) or replica; with
	// timeline, checkpointLSN and systemID it locates the data, so that a
	// cluster made again over kept claims starts from the most advanced.
	StoppedData string `json:"stoppedData,omitempty"`
	// parametersRefused says why this instance's PostgreSQL refuses the
	// cluster's spec.parameters (a name it does not know, a value out of
	// range): the instance keeps the configuration it has.
	ParametersRefused string `json:"parametersRefused,omitempty"`
	// backupFence is the run (example.com/backup-fence-by) the instance
	// is fenced for, once it stopped PostgreSQL for it: cleanShutdown is
	// then this run's, not a stale one of an earlier fence.
	BackupFence string `json:"backupFence,omitempty"`
	// archiving is a primary's continuous archiving, with
	// spec.backup.objectStore.
	Archiving *PostgresArchivingStatus `json:"archiving,omitempty"`
	// message says what the instance is doing, or why it is not ready.
	Message string `json:"message,omitempty"`
}
