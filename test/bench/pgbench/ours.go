package pgbench

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/pgspec"
	benchpg "example.com/platform-operator/test/bench/postgres"
)

const (
	namespace   = "bench-pgbench"
	clusterName = "db"
	instances   = 3
	// readyTimeout bounds the cluster's first start (an initdb and two
	// clones) and each change of its spec.
	readyTimeout = 5 * time.Minute
	// settingTimeout bounds the wait for the primary to show a changed
	// synchronous_standby_names once the cluster is whole.
	settingTimeout = time.Minute
	// postgresPortName is the pod's port of PostgreSQL, as the operator
	// names it.
	postgresPortName = "postgres"
)

// oursSetup is the PostgresCluster measured. Its volume is one on which
// the operator's max_wal_size, an eighth of it, is PostgreSQL's default,
// as the hand-made servers have it: the local cluster's volumes are
// folders, which take no more room for being asked larger.
var oursSetup = OursSetup{Instances: instances, Storage: "8Gi", Image: "postgres:15",
	SynchronousChange: "one cluster, spec.synchronous patched from 1 to 0, then the cluster whole again (Ready, every instance ready) and the primary showing synchronous_standby_names = ''",
	InitDBFlags:       handInitDBFlags}

// ours is the PostgresCluster on the local cluster.
type ours struct {
	c    *localcluster.Cluster
	cl   client.Client
	logf func(string, ...any)
	// app is the application's role, from the operator's Secret.
	app postgres.ConnInfo
	// parameters are the cluster's spec.parameters.
	parameters map[string]string
}

// create creates the cluster with synchronous: 1 and waits until it is
// whole.
func (o *ours) create(ctx context.Context) error {
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: namespace},
		Spec: v1alpha1.PostgresClusterSpec{Instances: oursSetup.Instances, Synchronous: 1, Image: oursSetup.Image,
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse(oursSetup.Storage)}, Parameters: o.parameters},
	}
	if err := o.cl.Create(ctx, pg); err != nil {
		return fmt.Errorf("create the PostgresCluster: %w", err)
	}
	if _, err := o.waitWhole(ctx); err != nil {
		return err
	}
	secret := &corev1.Secret{}
	if err := o.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pgspec.GeneratedAppSecret(clusterName)}, secret); err != nil {
		return fmt.Errorf("read the application's Secret: %w", err)
	}
	o.app = postgres.ConnInfo{User: string(secret.Data["username"]), Password: string(secret.Data["password"]), DBName: string(secret.Data["dbname"])}
	return nil
}

func (o *ours) get(ctx context.Context) (*v1alpha1.PostgresCluster, error) {
	pg := &v1alpha1.PostgresCluster{}
	err := o.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: clusterName}, pg)
	return pg, err
}

// waitWhole polls every 200 ms until the cluster is whole
// (benchpg.Whole), for readyTimeout at most.
func (o *ours) waitWhole(ctx context.Context) (*v1alpha1.PostgresCluster, error) {
	deadline := time.Now().Add(readyTimeout)
	var last *v1alpha1.PostgresCluster
	for time.Now().Before(deadline) {
		pg, err := o.get(ctx)
		if err == nil {
			last = pg
			if benchpg.Whole(pg) {
				return pg, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	if last == nil {
		return nil, fmt.Errorf("the PostgresCluster was not whole within %s", readyTimeout)
	}
	return nil, fmt.Errorf("the PostgresCluster was not whole within %s: phase %s, %s ready, primary %q", readyTimeout, last.Status.Phase, last.Status.ReadyInstances, last.Status.CurrentPrimary)
}

// setSynchronous patches spec.synchronous and waits until the cluster is
// whole and its primary shows the change.
func (o *ours) setSynchronous(ctx context.Context, n int32) error {
	pg, err := o.get(ctx)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(pg.DeepCopy())
	pg.Spec.Synchronous = n
	if err := o.cl.Patch(ctx, pg, patch); err != nil {
		return fmt.Errorf("set spec.synchronous to %d: %w", n, err)
	}
	if _, err := o.waitWhole(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(settingTimeout)
	for {
		primary, err := o.primary(ctx)
		var names string
		if err == nil {
			names, err = showSetting(ctx, primary.info, "synchronous_standby_names")
		}
		if err == nil && (names == "") == (n == 0) {
			o.logf("ours: synchronous %d, the primary shows synchronous_standby_names = %q", n, names)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the primary did not show synchronous: %d within %s (synchronous_standby_names %q, %v)", n, settingTimeout, names, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// primary is the current primary at its namespace address, once the
// cluster is whole.
func (o *ours) primary(ctx context.Context) (server, error) {
	pg, err := o.waitWhole(ctx)
	if err != nil {
		return server{}, err
	}
	name := pg.Status.CurrentPrimary
	addr, err := o.c.PostgresAddress(namespace, name)
	if err != nil {
		return server{}, err
	}
	port, err := o.podPort(ctx, name)
	if err != nil {
		return server{}, err
	}
	info := o.app
	info.Host, info.Port = addr, port
	return server{name: "primary pod " + name, info: info}, nil
}

// podPort is the pod's PostgreSQL port from its spec, pgspec.Port when
// the spec names none.
func (o *ours) podPort(ctx context.Context, name string) (int, error) {
	pod := &corev1.Pod{}
	if err := o.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, pod); err != nil {
		return 0, fmt.Errorf("read pod %s: %w", name, err)
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if c.Name == pgspec.ContainerName && p.Name == postgresPortName {
				return int(p.ContainerPort), nil
			}
		}
	}
	return pgspec.Port, nil
}

// service is the -rw Service at the loopback address of the
// simulation's proxy.
func (o *ours) service(ctx context.Context) (server, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		svc := &corev1.Service{}
		err := o.cl.Get(ctx, types.NamespacedName{Namespace: namespace, Name: pgspec.WriteService(clusterName)}, svc)
		if address := svc.Annotations[localcluster.SimulationAddressAnnotation]; err == nil && address != "" {
			host, port, err := net.SplitHostPort(address)
			if err != nil {
				return server{}, fmt.Errorf("service %s: address %q: %w", svc.Name, address, err)
			}
			n, err := strconv.Atoi(port)
			if err != nil {
				return server{}, fmt.Errorf("service %s: address %q: %w", svc.Name, address, err)
			}
			info := o.app
			info.Host, info.Port = host, n
			return server{name: "service " + svc.Name + " (loopback proxy)", info: info}, nil
		}
		if time.Now().After(deadline) {
			return server{}, fmt.Errorf("service %s has no simulated address after a minute (%v)", pgspec.WriteService(clusterName), err)
		}
		select {
		case <-ctx.Done():
			return server{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// instanceManagers are the running instance managers' process IDs, by
// pod.
func (o *ours) instanceManagers() map[string]int {
	out := map[string]int{}
	for n := 1; n <= instances; n++ {
		pod := clusterName + "-" + strconv.Itoa(n)
		if pid, err := o.c.PostgresProcessPID(namespace, pod); err == nil {
			out[pod] = pid
		}
	}
	return out
}

// showSetting is one parameter's value as info's role sees it.
func showSetting(ctx context.Context, info postgres.ConnInfo, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := postgres.Connect(ctx, info)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		return "", fmt.Errorf("current_setting(%s): %w", name, err)
	}
	return v, nil
}
