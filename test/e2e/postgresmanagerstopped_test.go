package e2e

import (
	"testing"
	"time"
)

// Issue 49, point 5: the primary's instance manager stopped, not dead
// (SIGSTOP), while its PostgreSQL runs on: it renews nothing and fences
// nothing. Its watchdog, a process of its own, stops PostgreSQL before the
// lease lapses; a standby is promoted once it has. Never two instances
// accept writes, no acknowledged commit is lost, and once the manager
// continues, the former primary rejoins as a replica. With synchronous: 0
// nothing else would stop the former primary's writes.
func TestPostgresClusterPrimaryManagerStopped(t *testing.T) {
	env, ns := pgNamespace(t)
	env.replacesPrimary(t, ns, "wd", primaryFault{
		name: "its instance manager stopped", instances: 2, synchronous: 0, promotedUnder: 2 * time.Minute,
		inject: env.Cluster.PauseInstanceManager, heal: env.Cluster.ResumeInstanceManager,
	})
}
