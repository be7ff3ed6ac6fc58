package instance

import (
	"io"
	"strings"
	"testing"
	"time"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// storeEnv is the environment the operator gives a store backup's Job for
// store (pgspec.StoreEnv), with the Secrets' keys resolved as the kubelet
// would.
func storeEnv(store *v1alpha1.PostgresObjectStore) map[string]string {
	env := map[string]string{pgspec.EnvPassword: "backup-secret"}
	for _, v := range pgspec.StoreEnv(pgspec.ArchiveStore, store, pgspec.StorePath(store, "shop", "db")) {
		switch {
		case v.ValueFrom == nil:
			env[v.Name] = v.Value
		case v.ValueFrom.SecretKeyRef.Key == v1alpha1.ObjectStoreAccessKeyIDKey:
			env[v.Name] = "AKIA"
		case v.ValueFrom.SecretKeyRef.Key == v1alpha1.ObjectStoreSecretAccessKeyKey:
			env[v.Name] = "s3cret"
		}
	}
	return env
}

func TestParseStoreBackupOptions(t *testing.T) {
	store := &v1alpha1.PostgresObjectStore{Endpoint: "http://seaweedfs:8333", Bucket: "backups", CredentialsSecret: "s3", Compression: "none"}
	args := []string{"--host", "db-1.db.shop.svc", "--label", "nightly-1700000000", "--cluster", "db", "--namespace", "shop"}
	for _, tc := range []struct {
		name    string
		args    []string
		env     func(map[string]string)
		wantErr []string
	}{
		{name: "as the operator's Job runs it", args: args},
		{name: "no flags", args: nil, wantErr: []string{"--host is required", "--label is required", "--cluster is required", "--namespace is required"}},
		{name: "no password", args: args, env: func(e map[string]string) { delete(e, pgspec.EnvPassword) }, wantErr: []string{pgspec.EnvPassword + " is empty"}},
		{name: "no store", args: args, env: func(e map[string]string) { delete(e, pgspec.ArchiveStore+"S3_ENDPOINT") },
			wantErr: []string{"no object store in the environment", "spec.backup.objectStore"}},
		{name: "a store without keys", args: args, env: func(e map[string]string) { delete(e, pgspec.ArchiveStore+"S3_SECRET_ACCESS_KEY") },
			wantErr: []string{pgspec.ArchiveStore}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := storeEnv(store)
			if tc.env != nil {
				tc.env(env)
			}
			opts, err := ParseStoreBackupOptions(tc.args, func(k string) string { return env[k] }, io.Discard)
			if len(tc.wantErr) > 0 {
				for _, want := range tc.wantErr {
					if err == nil || !strings.Contains(err.Error(), want) {
						t.Errorf("error %v, want it to say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			loc := opts.Location
			if opts.Host != "db-1.db.shop.svc" || opts.Port != pgspec.Port || opts.Label != "nightly-1700000000" || opts.Cluster != "db" || opts.Namespace != "shop" ||
				opts.Password != "backup-secret" || opts.TerminationLog != pgspec.TerminationLog {
				t.Errorf("options %+v", opts)
			}
			if loc.Endpoint != store.Endpoint || loc.Bucket != "backups" || loc.Prefix != "shop/db" || loc.AccessKeyID != "AKIA" || loc.SecretAccessKey != "s3cret" || loc.Compress {
				t.Errorf("location %+v, want the cluster's store at shop/db, uncompressed, with the Secret's keys", loc)
			}
		})
	}
}

// The point in time a drill at a backup's end recovers to is never before
// the backup is consistent (recovery targets are whole seconds).
func TestBackupPointInTime(t *testing.T) {
	for ended, want := range map[string]string{
		"2026-12-08T01:02:03.400Z": "2026-12-08T01:02:04Z",
		"2026-12-08T01:02:03Z":     "2026-12-08T01:02:04Z",
		"2026-12-08T01:02:59.999Z": "2026-12-08T01:03:00Z",
	} {
		at, err := time.Parse(time.RFC3339Nano, ended)
		if err != nil {
			t.Fatal(err)
		}
		if got := backupPointInTime(at).UTC().Format(time.RFC3339); got != want {
			t.Errorf("a backup ended at %s: point in time %s, want %s", ended, got, want)
		}
	}
}
