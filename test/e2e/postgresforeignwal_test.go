package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// Issue 49, point 4: a WAL client that is no standby of the cluster, here a
// pg_receivewal beside the primary (as an archiver or a backup server keeps
// one), does not vouch for a primary that is cut off from the API server and
// from its standby. Only the cluster's own standbys streaming would tell an
// API server outage from a partition; the receiver still streams, but the
// standby does not, so the primary fences itself before its lease lapses and
// the standby is promoted. Sampled through the sockets, never two instances
// answer as primaries; no acknowledged commit is lost; healed, the former
// primary rejoins as a replica. Counting every WAL sender (the code before
// the fix) kept the cut-off primary open beside the promoted one.
func TestPostgresClusterForeignWALClientVouchesForNoPrimary(t *testing.T) {
	env, ns := pgNamespace(t)
	const cluster = "wal"
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var receiver *exec.Cmd
	stopReceiver := func() {
		if receiver != nil && receiver.Process != nil {
			_ = receiver.Process.Kill()
			_ = receiver.Wait()
			receiver = nil
		}
	}
	t.Cleanup(stopReceiver)
	env.replacesPrimary(t, ns, cluster, primaryFault{
		name: "cut off with a pg_receivewal streaming from it", instances: 2, synchronous: 0, promotedUnder: 2 * time.Minute,
		inject: func(ns, pod string) error {
			var err error
			if receiver, err = env.startWALReceiver(ctx, t, ns, cluster, pod); err != nil {
				return err
			}
			if err := env.waitStreamingTo(ns, pod, "pg_receivewal", time.Minute); err != nil {
				return err
			}
			return env.Cluster.CutOffPostgres(ns, pod)
		},
		heal: func(ns, pod string) error {
			stopReceiver()
			return env.Cluster.ReconnectPostgres(ns, pod)
		},
	})
}

// startWALReceiver starts pg_receivewal in pod's network namespace,
// streaming from the pod's own address as the cluster's replication user,
// into a folder of the test's.
func (e *environment) startWALReceiver(ctx context.Context, t *testing.T, ns, cluster, pod string) (*exec.Cmd, error) {
	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: pgspec.ReplicationSecret(cluster)}, secret); err != nil {
		return nil, fmt.Errorf("reading the replication Secret: %w", err)
	}
	address, err := e.Cluster.PostgresAddress(ns, pod)
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	cmd, err := e.Cluster.CommandInPostgresPod(ctx, ns, pod, filepath.Join(pgspec.BinDir, "pg_receivewal"),
		"--directory", dir, "--no-loop", "--verbose",
		"--dbname", fmt.Sprintf("host=%s port=%d user=%s sslmode=require", address, pgspec.Port, postgres.ReplicationUser))
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Environ(), "PGPASSWORD="+string(secret.Data["password"]))
	log, err := os.Create(filepath.Join(dir, "pg_receivewal.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close() // the process keeps its own copy
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting pg_receivewal: %w", err)
	}
	return cmd, nil
}

// waitStreamingTo waits until the pod's PostgreSQL, asked through its
// socket, has a WAL sender streaming to applicationName.
func (e *environment) waitStreamingTo(ns, pod, applicationName string, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		streaming, err := e.streamsTo(ns, pod, applicationName)
		last = err
		return streaming, nil
	})
	if err != nil {
		return fmt.Errorf("no WAL sender of %s streams to %s after %s (last error: %v)", pod, applicationName, timeout, last)
	}
	return nil
}

func (e *environment) streamsTo(ns, pod, applicationName string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := e.superuserOverSocket(ctx, ns, pod)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'", applicationName).Scan(&n)
	return n > 0, err
}
