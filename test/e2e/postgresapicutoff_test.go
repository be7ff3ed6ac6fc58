package e2e

import (
	"testing"
	"time"
)

// Issue 49, point 2: the primary cut off from the API server alone, its
// network to the standbys intact. It cannot renew its lease, but every
// standby still streams from it, so it does not fence itself (an API server
// outage must not stop the database). Once the lease lapses the operator
// elects another: the standbys detach from the former primary before they
// report, so it can neither have a commit confirmed nor keep its exemption,
// and fences itself; a standby is promoted. Every acknowledged commit is
// kept, never two instances accept writes, and once it reaches the API
// server again the former primary rejoins as a replica.
func TestPostgresClusterPrimaryCutOffFromTheAPIServer(t *testing.T) {
	env, ns := pgNamespace(t)
	env.replacesPrimary(t, ns, "api", primaryFault{
		name: "cut off from the API server", instances: 3, synchronous: 1, promotedUnder: 2 * time.Minute,
		inject: env.Cluster.CutOffPostgresFromAPIServer, heal: env.Cluster.ReconnectPostgresToAPIServer,
	})
}
