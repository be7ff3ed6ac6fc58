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
)

// BootstrapOf is pg's bootstrap.
func BootstrapOf(pg *v1alpha1.PostgresCluster) Bootstrap {
	if b := pg.Spec.Bootstrap; b != nil && b.FromBackup != nil {
		return BootstrapVolumeBackup
	}
	return BootstrapInitDB
}

func (b Bootstrap) String() string {
	if b == BootstrapVolumeBackup {
		return "volume backup"
	}
	return "initdb"
}
