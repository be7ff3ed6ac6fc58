package pgspec

import "example.com/platform-operator/api/v1alpha1"

// Bootstrap is where a cluster's first data comes from, as its spec says.
// The operator makes the first instance's claim from it, the instance
// manager decides from it whether to initialize a database or start from
// what the claim holds: both read it here, so that they cannot disagree.
type Bootstrap int

const (
	// BootstrapInitDB: the first instance makes an empty database.
	BootstrapInitDB Bootstrap = iota
	// BootstrapVolumeBackup: the first instance's claim is cloned from a
	// BackupJob's volume backup (a snapshot or a base backup's claim); the
	// instance never makes an empty database.
	BootstrapVolumeBackup
	// BootstrapObjectStore: the first instance fetches a base backup from
	// an object store and replays the WAL archived after it, up to the
	// recovery target, then promotes; the instance never makes an empty
	// database either.
	BootstrapObjectStore
)

// BootstrapOf is pg's bootstrap.
func BootstrapOf(pg *v1alpha1.PostgresCluster) Bootstrap {
	if b := pg.Spec.Bootstrap; b != nil && b.FromBackup != nil {
		if b.FromBackup.ObjectStore != nil {
			return BootstrapObjectStore
		}
		return BootstrapVolumeBackup
	}
	return BootstrapInitDB
}

func (b Bootstrap) String() string {
	switch b {
	case BootstrapVolumeBackup:
		return "volume backup"
	case BootstrapObjectStore:
		return "object store"
	}
	return "initdb"
}
