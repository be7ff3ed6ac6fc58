package pgspec

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/objectstore"
)

// A pod reaches an object store through its environment, written by the
// operator (StoreEnv) and read by the instance manager and the tools
// (LocationFromEnv): the keys come from the user's Secrets, never from
// the operator's memory.
const (
	// ArchiveStore is the prefix of the variables of the cluster's own
	// store (spec.backup.objectStore): its primary archives there, base
	// backups go there.
	ArchiveStore = "ARCHIVE_"
	// RecoveryStore is the prefix of those of the store a cluster is
	// restored from (spec.bootstrap.fromBackup.objectStore).
	RecoveryStore = "RECOVERY_"
)

// Suffixes of the variables of one store.
const (
	envStoreEndpoint    = "S3_ENDPOINT"
	envStoreBucket      = "S3_BUCKET"
	envStorePath        = "S3_PATH"
	envStoreRegion      = "S3_REGION"
	envStoreCompression = "S3_COMPRESSION"
	envStoreAccessKey   = "S3_ACCESS_KEY_ID"
	envStoreSecretKey   = "S3_SECRET_ACCESS_KEY"
	envStoreCA          = "S3_CA_BUNDLE"
)

// StorePath is the path of store in its bucket: its own, else
// NAMESPACE/CLUSTER.
func StorePath(store *v1alpha1.PostgresObjectStore, namespace, cluster string) string {
	if store.Path != "" {
		return store.Path
	}
	return namespace + "/" + cluster
}

// StoreEnv are the variables that give a pod the store under prefix,
// its keys from the store's Secrets.
func StoreEnv(prefix string, store *v1alpha1.PostgresObjectStore, path string) []corev1.EnvVar {
	compression := store.Compression
	if compression == "" {
		compression = "gzip"
	}
	env := []corev1.EnvVar{
		{Name: prefix + envStoreEndpoint, Value: store.Endpoint},
		{Name: prefix + envStoreBucket, Value: store.Bucket},
		{Name: prefix + envStorePath, Value: path},
		{Name: prefix + envStoreRegion, Value: store.Region},
		{Name: prefix + envStoreCompression, Value: compression},
		SecretEnv(prefix+envStoreAccessKey, store.CredentialsSecret, v1alpha1.ObjectStoreAccessKeyIDKey),
		SecretEnv(prefix+envStoreSecretKey, store.CredentialsSecret, v1alpha1.ObjectStoreSecretAccessKeyKey),
	}
	if store.CASecret != "" {
		env = append(env, SecretEnv(prefix+envStoreCA, store.CASecret, v1alpha1.ObjectStoreCAKey))
	}
	return env
}

// LocationFromEnv is the store under prefix as StoreEnv gave it; false
// when the environment names none.
func LocationFromEnv(prefix string, getenv func(string) string) (objectstore.Location, bool, error) {
	if getenv(prefix+envStoreEndpoint) == "" {
		return objectstore.Location{}, false, nil
	}
	loc := objectstore.Location{
		Endpoint:        getenv(prefix + envStoreEndpoint),
		Bucket:          getenv(prefix + envStoreBucket),
		Prefix:          getenv(prefix + envStorePath),
		Region:          getenv(prefix + envStoreRegion),
		AccessKeyID:     getenv(prefix + envStoreAccessKey),
		SecretAccessKey: getenv(prefix + envStoreSecretKey),
		CABundle:        getenv(prefix + envStoreCA),
		Compress:        getenv(prefix+envStoreCompression) != "none",
	}
	if err := loc.Validate(); err != nil {
		return loc, true, fmt.Errorf("the object store of %s*: %w", prefix, err)
	}
	return loc, true, nil
}

// RetentionWindow is spec.backup.retention as a duration; 0 when unset.
func RetentionWindow(b *v1alpha1.PostgresBackupSpec) (time.Duration, error) {
	if b == nil || b.Retention == "" {
		return 0, nil
	}
	s := b.Retention
	n, err := strconv.Atoi(s[:len(s)-1])
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("spec.backup.retention %q: a positive number and a unit, m, h, d or w", s)
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[s[len(s)-1]]
	if unit == 0 {
		return 0, fmt.Errorf("spec.backup.retention %q: the unit is m, h, d or w", s)
	}
	return time.Duration(n) * unit, nil
}
