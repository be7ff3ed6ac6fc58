package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types of a PostgresCluster. Each is always present once the
// operator has reconciled it.
const (
	// PostgresReadyCondition is True when the cluster serves as specified:
	// a primary accepts writes through CLUSTER-rw and every replica streams
	// (or the cluster is hibernated, as asked).
	PostgresReadyCondition = "Ready"
	// PostgresPrimaryAvailableCondition is True while a primary accepts
	// writes through CLUSTER-rw.
	PostgresPrimaryAvailableCondition = "PrimaryAvailable"
	// PostgresReplicasReadyCondition is True when every replica streams
	// from the primary.
	PostgresReplicasReadyCondition = "ReplicasReady"
	// PostgresDegradedCondition is True when something needs a person; the
	// reason and message say what. False means nothing is wrong.
	PostgresDegradedCondition = "Degraded"
	// PostgresContinuousArchivingCondition, with spec.backup, is True
	// while the primary's WAL reaches the object store; False says why
	// not. Writes go on either way: WAL waits on the primary's volume.
	PostgresContinuousArchivingCondition = "ContinuousArchiving"
)

// Reasons of ContinuousArchiving.
const (
	PostgresArchivingReason       = "Archiving"
	PostgresArchiveFailingReason  = "ArchiveFailing"
	PostgresArchiveStartingReason = "Starting"
)

// Reasons of the PostgresCluster's conditions.
const (
	PostgresAvailableReason        = "Available"
	PostgresInitializingReason     = "Initializing"
	PostgresFailingOverReason      = "FailingOver"
	PostgresSwitchingOverReason    = "SwitchingOver"
	PostgresFencedReason           = "Fenced"
	PostgresHibernatedReason       = "Hibernated"
	PostgresStorageResizingReason  = "StorageResizing"
	PostgresReplicasStartingReason = "ReplicasStarting"
	PostgresReplicasLaggingReason  = "ReplicasNotStreaming"
	PostgresNoPrimaryReason        = "NoPrimary"
	// PostgresWaitingForQuorumReason (Degraded=True): the primary failed
	// and too few synchronous standbys can report for a failover to be
	// sure of every acknowledged commit; the message names the instances
	// it waits for.
	PostgresWaitingForQuorumReason = "WaitingForQuorum"
	// PostgresReplicasTooFarBehindReason (Degraded=True): the primary
	// failed and every replica is further behind its last position than
	// spec.maxLagOnFailover.
	PostgresReplicasTooFarBehindReason = "ReplicasTooFarBehind"
	// PostgresSwitchoverAbandonedReason (Degraded=True): a switchover was
	// given up, its target not promoted in time, and spec.primary (or a
	// drain) still asks for that target, which is not tried again before
	// status.abandonedSwitchover.retryAfter.
	PostgresSwitchoverAbandonedReason = "SwitchoverAbandoned"
	PostgresUpgradingReason           = "Upgrading"
	PostgresInvalidSpecReason         = "InvalidSpec"
	PostgresSecretMissingReason       = "SecretMissing"
	PostgresConflictReason            = "Conflict"
	// PostgresCertificateInvalidReason (Degraded=True): the Secret that
	// spec.tls.serverCertSecret names lacks a key, does not chain to its
	// ca.crt, does not cover a host, or has ended; the instances keep
	// serving the certificate they have.
	PostgresCertificateInvalidReason = "CertificateInvalid"
	// PostgresKeptClaimsReason (Degraded=True): claims of the instances'
	// names were kept from an earlier PostgresCluster of the name; no
	// instance starts until annotation example.com/adopt-kept-claims takes
	// them or someone deletes them.
	PostgresKeptClaimsReason     = "KeptClaims"
	PostgresApplyFailedReason    = "ApplyFailed"
	PostgresStorageShrinkReason  = "StorageCannotShrink"
	PostgresDeletingReason       = "Deleting"
	PostgresAsExpectedReason     = "AsExpected"
	PostgresNoReplicasReason     = "NoReplicas"
	PostgresBackupNotFoundReason = "BackupNotFound"
	// PostgresBackupFencedReason (ReplicasReady=False): a BackupJob's run
	// fenced an instance for a cold snapshot (annotation
	// example.com/backup-fence; status.instances[].fenced): it catches up
	// once unfenced.
	PostgresBackupFencedReason = "BackupFenced"
)

// GetConditions returns the status's conditions.
func (s *PostgresClusterStatus) GetConditions() []metav1.Condition { return s.Conditions }

// GetObservedGeneration returns the generation the status describes.
func (s *PostgresClusterStatus) GetObservedGeneration() int64 { return s.ObservedGeneration }
