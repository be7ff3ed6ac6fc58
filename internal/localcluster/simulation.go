package localcluster

// SIMULATION. Everything in the files simulation*.go stands in, on the
// local cluster only, for what a real cluster's storage and kubelets
// provide: a CSI driver that provisions, expands and snapshots volumes, and
// the containers of PostgreSQL pods. None of it is part of the operator, and
// none of it is installed on a real cluster. It runs in the process that
// started the cluster, when Options.Simulations is set:
//
//   - a StorageClass "local" (the default class, allowing expansion) and a
//     volume provisioner that binds each Pending claim of that class,
//     restores (claims with a dataSource) included, to a PersistentVolume it
//     makes, grows the volume and the claim's capacity when a bound claim
//     asks for more, and deletes the volumes whose claims are gone
//     (simulation_volumes.go);
//   - the VolumeSnapshot CRDs of the external-snapshotter, as its client
//     module ships them (simulation_crds/), and a snapshot simulator that
//     makes each VolumeSnapshot ready to use with a VolumeSnapshotContent,
//     or failed when annotated simulation.example.com/fail: "true"
//     (simulation_snapshots.go);
//   - a kwok stage that ends a Job's pod Failed when the pod is annotated
//     simulation.example.com/fail: "true", for example through a
//     BackupJob's jobTemplate (simulation_stages.go). Other Job pods
//     succeed, by kwok's own pod-complete stage;
//   - with Options.InstanceBinary, PostgreSQL pods (labelled
//     example.com/postgrescluster) that really run: the instance manager of
//     each as a host process in a network namespace of its own, with its
//     data in a host folder of its volume, and a proxy on loopback for each
//     Service of a PostgreSQL cluster (simulation_postgres*.go).
//
// Other pods run no containers, so their volumes hold no data: a "copy" is
// the Job's success, and a restore is a claim that binds.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
)

const (
	// SimulationStorageClass is the StorageClass whose claims the
	// simulated provisioner binds; it is the cluster's default class.
	SimulationStorageClass = "local"
	// SimulationDriver is the fake CSI driver of the simulated volumes and
	// snapshots. It is registered as a CSIDriver that needs no attach, so
	// that no VolumeAttachment waits for an attacher that does not exist.
	SimulationDriver = "simulation.example.com"
	// SimulationFailAnnotation, set to "true" on a VolumeSnapshot or on a
	// Job's pod (its template), makes the simulation fail it.
	SimulationFailAnnotation = "simulation.example.com/fail"
	// SimulationHoldAnnotation, set to "true" on a claim, makes the
	// snapshots of the claim wait, as a slow storage system's would,
	// until it is removed: tests use it to keep a backup running.
	SimulationHoldAnnotation = "simulation.example.com/hold"
	// simulationInterval is how often the simulators look for work.
	simulationInterval = 300 * time.Millisecond
)

// simulations are the running simulators of one cluster.
type simulations struct {
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	postgres *postgresSimulation // nil when off
}

// startSimulations installs what the simulators need (StorageClass,
// CSIDriver, VolumeSnapshot CRDs) and starts them. They run until
// stopSimulations.
func (c *Cluster) startSimulations(ctx context.Context) error {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(snapshotv1.AddToScheme(scheme))
	cl, err := client.New(c.RESTConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("simulation: client: %w", err)
	}
	if err := installStorageSimulation(ctx, cl); err != nil {
		return err
	}
	if err := installSnapshotCRDs(ctx, cl); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the VolumeSnapshot CRDs to be served", func(ctx context.Context) error {
		return cl.List(ctx, &snapshotv1.VolumeSnapshotList{}, client.Limit(1))
	}); err != nil {
		return err
	}

	s := &simulations{}
	postgres := "off: " + c.postgresOff
	if c.postgresOff == "" {
		var err error
		if s.postgres, err = c.startPostgresSimulation(cl); err != nil {
			return err
		}
		postgres = fmt.Sprintf("instance managers and base backups of %s on network %s (%s)", s.postgres.binary, s.postgres.net.bridge, s.postgres.net.prefix)
	}
	objectStore := "off"
	if s.postgres != nil && c.opts.ObjectStoreBinDir != "" {
		store, err := c.startObjectStore(ctx, c.opts.ObjectStoreBinDir, s.postgres.net.host.String())
		if err != nil {
			s.postgres.stop()
			return err
		}
		if err := c.waitFor(ctx, "the object store's Secret to be written", func(ctx context.Context) error {
			return publishObjectStore(ctx, cl, *store)
		}); err != nil {
			s.postgres.stop()
			return err
		}
		s.postgres.extraHosts = fmt.Sprintf("%s\t%s\n", s.postgres.net.host, ObjectStoreHost)
		c.mu.Lock()
		c.objectStore = store
		c.mu.Unlock()
		objectStore = "S3 at " + store.Endpoint
	}
	var volumesDir string
	if s.postgres != nil {
		volumesDir = s.postgres.volumes
	}
	provision := func(ctx context.Context, cl client.Client) { provisionVolumes(ctx, cl, volumesDir) }
	snapshots := func(ctx context.Context, cl client.Client) { simulateSnapshots(ctx, cl, volumesDir) }

	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, loop := range []func(context.Context, client.Client){provision, snapshots} {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			poll(runCtx, cl, loop)
		}()
	}
	c.mu.Lock()
	c.sims = s
	c.mu.Unlock()
	c.opts.Logf("Simulation parts running: StorageClass %q provisioner, VolumeSnapshot CRDs and simulator, failing pods annotated %s; PostgreSQL pods: %s; object store: %s",
		SimulationStorageClass, SimulationFailAnnotation, postgres, objectStore)
	return nil
}

// stopSimulations stops the simulators, if they run.
func (c *Cluster) stopSimulations() {
	c.mu.Lock()
	s := c.sims
	c.sims = nil
	c.mu.Unlock()
	if s != nil {
		s.cancel()
		s.wg.Wait()
		if s.postgres != nil {
			s.postgres.stop()
		}
	}
}

// simulationWorkers bounds how many objects a simulator handles at once in
// a round, as the worker threads of a CSI sidecar do (the
// external-snapshotter's default is 10): one at a time, a thousand
// snapshots due in the same minute would take longer than the minute.
func simulationWorkers() *errgroup.Group {
	g := &errgroup.Group{}
	g.SetLimit(10)
	return g
}

// poll runs step every simulationInterval until ctx ends. Errors are left
// to the next round: the API server may be stopped on purpose by a test.
func poll(ctx context.Context, cl client.Client, step func(context.Context, client.Client)) {
	ticker := time.NewTicker(simulationInterval)
	defer ticker.Stop()
	for {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		step(attempt, cl)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
