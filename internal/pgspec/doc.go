// Package pgspec is the contract of a PostgresCluster: the facts that the
// operator (internal/controller/postgrescluster), the BackupJob controller,
// the instance manager (internal/instance) and the local cluster's
// simulation each rely on the others to agree with. Each is written here
// once, so that a change of one (a name, a path, an environment variable,
// how a tool Job's pod is laid out) cannot leave one side behind.
//
// It imports the API types, Kubernetes' own types and the PostgreSQL
// library (for its WAL positions) only, never a controller or the instance
// manager: every side imports it, so it must not import them.
package pgspec
