package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The object store, a simulation part: SeaweedFS's weed (hack/seaweedfs.sh
// builds it) serving S3 on the host's address of the PostgreSQL network,
// so that the PostgreSQL pods, in their network namespaces, and the host
// reach it at one endpoint. One identity, with keys made at start, may do
// everything; anonymous requests are refused. SIMULATION: a real cluster's
// object store is a service outside it.

// ObjectStoreBinDirEnv names the variable with the folder of weed.
const ObjectStoreBinDirEnv = "SEAWEEDFS_BIN_DIR"

// ObjectStoreComponent is the object store's name for StopComponent and
// StartComponent: an outage of the store is a fault to test.
const ObjectStoreComponent = "seaweedfs"

// ObjectStoreHost is the name by which the PostgreSQL pods reach the
// object store, at ObjectStorePort: every pod's hosts file names it, so
// that a manifest (examples/postgrescluster.yaml) can give its endpoint,
// PodObjectStoreEndpoint. Each cluster's store listens on the address of
// its own network, so a fixed port never collides with another cluster's.
const (
	ObjectStoreHost        = "objectstore.local-cluster"
	ObjectStorePort        = 8333
	PodObjectStoreEndpoint = "http://objectstore.local-cluster:8333"
)

// ObjectStoreSecret is the Secret, in the default namespace, with the
// store's keys (accessKeyId, secretAccessKey, as a PostgresCluster's
// spec.backup.objectStore.credentialsSecret reads them) and its endpoint.
const ObjectStoreSecret = "object-store"

// ObjectStore is how to reach the local cluster's object store.
type ObjectStore struct {
	// Endpoint is the S3 endpoint from the host, http://ADDRESS:PORT; the
	// pods use PodObjectStoreEndpoint.
	Endpoint string
	// Region is the region to sign requests for.
	Region string
	// AccessKeyID and SecretAccessKey are the one identity's keys.
	AccessKeyID, SecretAccessKey string
}

// objectStoreRegion is any region: SeaweedFS serves every one.
const objectStoreRegion = "us-east-1"

// ObjectStore says how to reach the object store, and false when the
// cluster runs none (no ObjectStoreBinDir, or no PostgreSQL network).
func (c *Cluster) ObjectStore() (ObjectStore, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objectStore == nil {
		return ObjectStore{}, false
	}
	return *c.objectStore, true
}

// startObjectStore runs weed server with its master, volume, filer and S3
// parts on address, its data under the cluster's folder, and waits until
// S3 answers.
func (c *Cluster) startObjectStore(ctx context.Context, binDir, address string) (*ObjectStore, error) {
	weed := filepath.Join(binDir, "weed")
	if _, err := os.Stat(weed); err != nil {
		return nil, fmt.Errorf("simulation: object store: %w (hack/seaweedfs.sh builds it)", err)
	}
	dir := filepath.Join(c.dir, "objectstore")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		return nil, fmt.Errorf("simulation: object store: %w", err)
	}
	store := &ObjectStore{Region: objectStoreRegion, AccessKeyID: randomKey(10), SecretAccessKey: randomKey(20)}
	config := filepath.Join(dir, "s3.json")
	if err := WriteS3Identities(config, "platform-operator", store.AccessKeyID, store.SecretAccessKey); err != nil {
		return nil, err
	}
	// weed's gRPC ports default to each port + 10000: named here, all
	// free, so that two clusters on one machine never collide.
	ports, err := freePorts(8)
	if err != nil {
		return nil, fmt.Errorf("simulation: object store ports: %w", err)
	}
	store.Endpoint = "http://" + net.JoinHostPort(address, strconv.Itoa(ObjectStorePort))
	p := NewProcess(ObjectStoreComponent, weed, filepath.Join(c.dir, ObjectStoreComponent+".log"), "-logdir="+dir, "server",
		"-ip="+address, "-ip.bind="+address, "-dir="+filepath.Join(dir, "data"),
		"-master.port="+strconv.Itoa(ports[0]), "-master.port.grpc="+strconv.Itoa(ports[1]),
		"-volume.port="+strconv.Itoa(ports[2]), "-volume.port.grpc="+strconv.Itoa(ports[3]),
		"-filer.port="+strconv.Itoa(ports[4]), "-filer.port.grpc="+strconv.Itoa(ports[5]),
		// Each bucket takes volumes of its own: weed's default of 8
		// volumes of 30 GiB each serves one bucket, and the tests make
		// one per cluster. Small volumes, many of them, grow as used.
		"-volume.max=256", "-master.volumeSizeLimitMB=64",
		"-s3", "-s3.port="+strconv.Itoa(ObjectStorePort), "-s3.port.grpc="+strconv.Itoa(ports[7]), "-s3.config="+config)
	if err := c.run(p); err != nil {
		return nil, fmt.Errorf("simulation: start the object store: %w", err)
	}
	if err := c.waitFor(ctx, "the object store to answer", func(ctx context.Context) error {
		return S3Answers(ctx, store.Endpoint)
	}); err != nil {
		return nil, err
	}
	return store, nil
}

// publishObjectStore writes ObjectStoreSecret: the store's keys for
// manifests to name, as a platform team would hand them out.
func publishObjectStore(ctx context.Context, cl client.Client, store ObjectStore) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectStoreSecret, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"app.kubernetes.io/part-of": "local-cluster-simulation"}},
		StringData: map[string]string{
			"accessKeyId": store.AccessKeyID, "secretAccessKey": store.SecretAccessKey,
			"endpoint": PodObjectStoreEndpoint, "region": store.Region,
		},
	}
	if err := cl.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("simulation: object store: Secret %s: %w", ObjectStoreSecret, err)
	}
	return nil
}

// WriteS3Identities writes weed's S3 configuration at path: one identity,
// name, with the keys given, allowed everything; with an identity
// configured, anonymous requests are refused. The benchmarks that run weed
// themselves write theirs with it too.
func WriteS3Identities(path, name, accessKeyID, secretAccessKey string) error {
	type credential struct {
		AccessKey string `json:"accessKey"`
		SecretKey string `json:"secretKey"`
	}
	type identity struct {
		Name        string       `json:"name"`
		Credentials []credential `json:"credentials"`
		Actions     []string     `json:"actions"`
	}
	data, err := json.Marshal(map[string][]identity{"identities": {{
		Name:        name,
		Credentials: []credential{{AccessKey: accessKeyID, SecretKey: secretAccessKey}},
		Actions:     []string{"Admin", "Read", "List", "Tagging", "Write"},
	}}})
	if err != nil {
		return fmt.Errorf("object store identities: %w", err)
	}
	return os.WriteFile(path, data, 0o600)
}

// S3Answers tells whether the S3 endpoint answers at all: an anonymous
// request is refused, which is an answer.
func S3Answers(ctx context.Context, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("the object store answers %s", resp.Status)
	}
	return nil
}

func randomKey(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
