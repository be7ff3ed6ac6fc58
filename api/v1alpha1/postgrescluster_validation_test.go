package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// postgresCluster parses a PostgresCluster in namespace default from YAML.
func postgresCluster(t *testing.T, name, yamlSpec string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	doc := "apiVersion: example.com/v1alpha1\nkind: PostgresCluster\nmetadata:\n  name: " + name + "\n  namespace: default\n" + yamlSpec
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("test case YAML: %v", err)
	}
	return obj
}

// The API server refuses every impossible PostgresCluster, naming the field.
// (Parameters the operator owns are its to refuse: the API server's budget
// for rules cannot afford a check of every key of a map.)
func TestPostgresClusterValidation(t *testing.T) {
	suite.NeedsAPIServer(t)
	c := suite.Client
	ctx := context.Background()

	t.Run("defaults", func(t *testing.T) {
		g := NewWithT(t)
		pg := postgresCluster(t, "defaults", "spec: {storage: {size: 1Gi}}")
		g.Expect(c.Create(ctx, pg)).To(Succeed())
		spec := pg.Object["spec"].(map[string]any)
		g.Expect(spec).To(HaveKeyWithValue("instances", BeNumerically("==", 1)))
		g.Expect(spec).To(HaveKeyWithValue("image", "postgres:15"))
		g.Expect(spec).To(HaveKeyWithValue("deletionPolicy", "Retain"))
		g.Expect(spec).To(HaveKeyWithValue("synchronous", BeNumerically("==", 0)))
	})

	for _, tc := range []struct{ name, spec, field, says string }{
		{"no storage", "spec: {instances: 3}", "spec.storage", "Required"},
		{"no instance", "spec: {instances: 0, storage: {size: 1Gi}}", "spec.instances", ""},
		{"ten instances", "spec: {instances: 10, storage: {size: 1Gi}}", "spec.instances", ""},
		{"tiny storage", "spec: {storage: {size: 1Ki}}", "spec.storage.size", "at least 16Mi"},
		{"a negative lag on failover", "spec: {storage: {size: 1Gi}, maxLagOnFailover: -1Mi}", "spec.maxLagOnFailover", "0 or more"},
		{"a lag on failover that is no size", "spec: {storage: {size: 1Gi}, maxLagOnFailover: lots}", "spec.maxLagOnFailover", ""},
		{"a synchronous standby for each instance", "spec: {instances: 2, synchronous: 2, storage: {size: 1Gi}}", "spec.synchronous", "less than instances"},
		{"a primary that is no instance", "spec: {instances: 2, primary: db-3, storage: {size: 1Gi}}", "spec.primary", "one of the instances"},
		{"a primary of another cluster", "spec: {instances: 2, primary: other-1, storage: {size: 1Gi}}", "spec.primary", "one of the instances"},
		{"a fenced instance of another cluster", "spec: {fencedInstances: [other-1], storage: {size: 1Gi}}", "spec.fencedInstances", ""},
		{"an owner the operator owns", "spec: {storage: {size: 1Gi}, bootstrap: {initdb: {owner: postgres}}}", "spec.bootstrap.initdb.owner", ""},
		{"an unknown deletion policy", "spec: {storage: {size: 1Gi}, deletionPolicy: Destroy}", "spec.deletionPolicy", ""},
		{"an image with spaces", "spec: {storage: {size: 1Gi}, image: 'postgres 15'}", "spec.image", ""},
		{"an object store that is no URL", "spec: {storage: {size: 1Gi}, backup: {objectStore: {endpoint: s3.example.com, bucket: wal, credentialsSecret: keys}}}", "spec.backup.objectStore.endpoint", ""},
		{"an object store without keys", "spec: {storage: {size: 1Gi}, backup: {objectStore: {endpoint: 'https://s3.example.com', bucket: wal}}}", "spec.backup.objectStore.credentialsSecret", "Required"},
		{"an archive timeout of a second", "spec: {storage: {size: 1Gi}, backup: {archiveTimeout: 1s, objectStore: {endpoint: 'https://s3.example.com', bucket: wal, credentialsSecret: keys}}}", "spec.backup.archiveTimeout", "between 10s and 24h"},
		{"a restore from a BackupJob and a store", "spec: {storage: {size: 1Gi}, bootstrap: {fromBackup: {backupJob: nightly, objectStore: {endpoint: 'https://s3.example.com', bucket: wal, path: prod/db, credentialsSecret: keys}}}}", "spec.bootstrap.fromBackup", "backupJob or objectStore"},
		{"a restore from a store without its path", "spec: {storage: {size: 1Gi}, bootstrap: {fromBackup: {objectStore: {endpoint: 'https://s3.example.com', bucket: wal, credentialsSecret: keys}}}}", "spec.bootstrap.fromBackup.objectStore", "path is required"},
		{"two recovery targets", "spec: {storage: {size: 1Gi}, bootstrap: {fromBackup: {targetLSN: 0/3000000, targetName: x, objectStore: {endpoint: 'https://s3.example.com', bucket: wal, path: prod/db, credentialsSecret: keys}}}}", "spec.bootstrap.fromBackup", "at most one of targetTime, targetLSN and targetName"},
		{"a recovery target for a volume backup", "spec: {storage: {size: 1Gi}, bootstrap: {fromBackup: {backupJob: nightly, targetName: x}}}", "spec.bootstrap.fromBackup", "needs objectStore"},
		{"a target LSN that is none", "spec: {storage: {size: 1Gi}, bootstrap: {fromBackup: {targetLSN: yesterday, objectStore: {endpoint: 'https://s3.example.com', bucket: wal, path: prod/db, credentialsSecret: keys}}}}", "spec.bootstrap.fromBackup.targetLSN", ""},
	} {
		t.Run("refused: "+tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := c.Create(ctx, postgresCluster(t, "db", tc.spec))
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.field))
			g.Expect(err.Error()).To(ContainSubstring(tc.says))
		})
	}

	t.Run("refused: a name too long for its instances", func(t *testing.T) {
		g := NewWithT(t)
		err := c.Create(ctx, postgresCluster(t, strings.Repeat("a", 51), "spec: {storage: {size: 1Gi}}"))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("metadata.name"))
	})

	t.Run("bootstrap never changes: not removed, not added after creation", func(t *testing.T) {
		g := NewWithT(t)
		pg := postgresCluster(t, "booted", "spec: {storage: {size: 1Gi}, bootstrap: {initdb: {owner: shop, database: orders}}}")
		g.Expect(c.Create(ctx, pg)).To(Succeed())
		unstructured.RemoveNestedField(pg.Object, "spec", "bootstrap")
		err := c.Update(ctx, pg)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "bootstrap removed: %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.bootstrap cannot be added or removed"))

		plain := postgresCluster(t, "plain", "spec: {storage: {size: 1Gi}}")
		g.Expect(c.Create(ctx, plain)).To(Succeed())
		g.Expect(unstructured.SetNestedField(plain.Object, "shop", "spec", "bootstrap", "initdb", "owner")).To(Succeed())
		err = c.Update(ctx, plain)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "bootstrap added: %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.bootstrap cannot be added or removed"))
	})

	t.Run("storage grows, never shrinks; its class never changes", func(t *testing.T) {
		g := NewWithT(t)
		pg := postgresCluster(t, "grows", "spec: {instances: 2, primary: grows-2, storage: {size: 2Gi, storageClassName: local}}")
		g.Expect(c.Create(ctx, pg)).To(Succeed())
		g.Expect(unstructured.SetNestedField(pg.Object, "3Gi", "spec", "storage", "size")).To(Succeed())
		g.Expect(c.Update(ctx, pg)).To(Succeed())
		g.Expect(unstructured.SetNestedField(pg.Object, "1Gi", "spec", "storage", "size")).To(Succeed())
		err := c.Update(ctx, pg)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.storage.size"))
		g.Expect(err.Error()).To(ContainSubstring("cannot shrink"))

		g.Expect(c.Get(ctx, keyOf(pg), pg)).To(Succeed())
		g.Expect(unstructured.SetNestedField(pg.Object, "fast", "spec", "storage", "storageClassName")).To(Succeed())
		err = c.Update(ctx, pg)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("storageClassName"))
	})
}

func keyOf(obj metav1.Object) client.ObjectKey {
	return client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}
