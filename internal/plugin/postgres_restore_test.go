package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/api/v1alpha1"
)

// archived is cluster db of namespace shop with an object store, a
// custom owner, and a store that can restore it from 10:00 on.
func archived(change func(*v1alpha1.PostgresCluster)) *v1alpha1.PostgresCluster {
	return inShop(cluster(func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Image = "postgres:15"
		pg.Spec.Primary = "db-2"
		pg.Spec.FencedInstances = []string{"db-3"}
		pg.Spec.Synchronous = 1
		pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{InitDB: &v1alpha1.PostgresInitDB{Owner: "shop", Database: "orders"}}
		pg.Spec.Backup = &v1alpha1.PostgresBackupSpec{Retention: "30d", ObjectStore: v1alpha1.PostgresObjectStore{
			Endpoint: "https://s3.example.com", Bucket: "pg-backups", CredentialsSecret: "s3-keys"}}
		pg.Status.Archiving = &v1alpha1.PostgresArchivingStatus{
			FirstRecoverabilityPoint: &metav1.Time{Time: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)},
			LastArchivedWAL:          "000000010000000000000007",
			LastArchivedAt:           &metav1.Time{Time: time.Date(2026, 12, 7, 11, 58, 0, 0, time.UTC)},
		}
		if change != nil {
			change(pg)
		}
	}))
}

func TestParseTargetTime(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in, want, err string
	}{
		{in: "2026-12-07T11:02:00Z", want: "2026-12-07T11:02:00Z"},
		{in: "2026-12-07T12:30:00+01:00", want: "2026-12-07T11:30:00Z"},
		{in: "2026-12-07T12:00:00Z", want: "2026-12-07T12:00:00Z"},
		{in: "2026-12-07T12:00:01Z", err: "is in the future"},
		{in: "2026-12-07 11:02:00", err: "not an RFC 3339 time"},
		{in: "yesterday", err: "not an RFC 3339 time"},
		{in: "2026-12-07T11:02:00.5Z", err: "fraction of a second: the recovery target is whole seconds (2026-12-07T11:02:00Z)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTargetTime(tt.in, now)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("got %v, %v; want an error with %q", got, err, tt.err)
				}
				return
			}
			if err != nil || got.Format(time.RFC3339) != tt.want {
				t.Errorf("got %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestRestoreManifest(t *testing.T) {
	target := time.Date(2026, 12, 7, 11, 2, 0, 0, time.UTC)
	tests := []struct {
		name, newName string
		target        time.Time
		change        func(*v1alpha1.PostgresCluster)
		wantName      string
		wantPath      string
		wantWarnings  []string
		err           string
	}{
		{name: "default name, default path", target: target, wantName: "db-20261207-110200", wantPath: "shop/db"},
		{name: "given name", newName: "db-before-delete", target: target, wantName: "db-before-delete", wantPath: "shop/db"},
		{name: "the source's own path", target: target, wantName: "db-20261207-110200", wantPath: "prod/db",
			change: func(pg *v1alpha1.PostgresCluster) { pg.Spec.Backup.ObjectStore.Path = "prod/db" }},
		{name: "at the first recoverability point", target: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC),
			wantName: "db-20261207-100000", wantPath: "shop/db"},
		{name: "before the first recoverability point", target: time.Date(2026, 12, 7, 9, 59, 59, 0, time.UTC),
			err: "--to-time 2026-12-07T09:59:59Z is before 2026-12-07T10:00:00Z, the first recoverability point of db"},
		{name: "no archiving status: a warning", target: target, wantName: "db-20261207-110200", wantPath: "shop/db",
			change:       func(pg *v1alpha1.PostgresCluster) { pg.Status.Archiving = nil },
			wantWarnings: []string{"db reports no base backup in its store"}},
		{name: "after the last archived WAL: a warning", target: time.Date(2026, 12, 7, 11, 59, 0, 0, time.UTC),
			wantName: "db-20261207-115900", wantPath: "shop/db",
			wantWarnings: []string{"after the last WAL file db reported archived (000000010000000000000007 at 2026-12-07T11:58:00Z)"}},
		{name: "no archive", target: target, change: func(pg *v1alpha1.PostgresCluster) { pg.Spec.Backup = nil },
			err: "PostgresCluster shop/db has no spec.backup: no WAL archive to replay to a time"},
		{name: "the source's name", newName: "db", target: target, err: "a name other than db's"},
		{name: "a name admission refuses", newName: "DB_2", target: target, err: `"DB_2" cannot name a PostgresCluster`},
		{name: "a default name too long", target: target, err: "longer than a PostgresCluster's 50 characters: name the new cluster",
			change: func(pg *v1alpha1.PostgresCluster) { pg.Name = strings.Repeat("d", 40) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := archived(tt.change)
			before := src.DeepCopy()
			got, warnings, err := restoreManifest(src, tt.newName, tt.target)
			if diff := cmp.Diff(before, src); diff != "" {
				t.Errorf("the source changed (-before +after):\n%s", diff)
			}
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v; want an error with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) != len(tt.wantWarnings) {
				t.Fatalf("warnings %q, want %q", warnings, tt.wantWarnings)
			}
			for i, w := range tt.wantWarnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %q, want one with %q", warnings[i], w)
				}
			}
			if got.Name != tt.wantName || got.Namespace != "shop" {
				t.Errorf("new cluster %s/%s, want shop/%s", got.Namespace, got.Name, tt.wantName)
			}
			from := got.Spec.Bootstrap.FromBackup
			if got.Spec.Bootstrap.InitDB != nil || from == nil || from.BackupJob != "" {
				t.Fatalf("bootstrap %+v, want fromBackup.objectStore alone", got.Spec.Bootstrap)
			}
			if from.ObjectStore.Path != tt.wantPath || from.ObjectStore.Bucket != "pg-backups" ||
				from.ObjectStore.CredentialsSecret != "s3-keys" || !from.TargetTime.Time.Equal(tt.target) {
				t.Errorf("fromBackup %+v at %v, want the source's store at path %s, to %v", from.ObjectStore, from.TargetTime, tt.wantPath, tt.target)
			}
			if from.Owner != "shop" || from.Database != "orders" {
				t.Errorf("fromBackup owner %q database %q, want the source's shop, orders", from.Owner, from.Database)
			}
			if got.Spec.Backup == nil || got.Spec.Backup.ObjectStore.Path != "" || got.Spec.Backup.Retention != "30d" {
				t.Errorf("spec.backup %+v, want the source's, archiving to the default path", got.Spec.Backup)
			}
			if got.Spec.Primary != "" || got.Spec.FencedInstances != nil || got.Spec.Instances != 3 || got.Spec.Synchronous != 1 {
				t.Errorf("spec %+v: want the source's shape without its primary and fences", got.Spec)
			}
		})
	}
}

func TestRestoreCommand(t *testing.T) {
	// Printed: YAML that reads back as the manifest, with no status.
	out, c, err := run(t, []client.Object{archived(nil)}, "pg", "restore", "db", "--to-time", "2026-12-07T11:02:00Z")
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	var printed v1alpha1.PostgresCluster
	if err := yaml.UnmarshalStrict([]byte(out), &printed); err != nil {
		t.Fatalf("the output is no PostgresCluster: %v\n%s", err, out)
	}
	want, _, _ := restoreManifest(archived(nil), "", time.Date(2026, 12, 7, 11, 2, 0, 0, time.UTC))
	if diff := cmp.Diff(want, &printed); diff != "" {
		t.Errorf("printed manifest (-want +got):\n%s", diff)
	}
	for _, s := range []string{"kind: PostgresCluster", "targetTime: \"2026-12-07T11:02:00Z\"", "path: shop/db", "namespace: shop"} {
		if !strings.Contains(out, s) {
			t.Errorf("the manifest lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "status") || strings.Contains(out, "creationTimestamp") {
		t.Errorf("the manifest has a status or creationTimestamp:\n%s", out)
	}
	var list v1alpha1.PostgresClusterList
	if err := c.List(t.Context(), &list); err != nil || len(list.Items) != 1 {
		t.Errorf("printing created something: %d clusters, %v", len(list.Items), err)
	}

	// Applied: created, once.
	out, c, err = run(t, []client.Object{archived(nil)}, "pg", "restore", "db", "db-before-delete", "--to-time", "2026-12-07T11:02:00Z", "--apply")
	if err != nil || !strings.Contains(out, "postgrescluster/db-before-delete created: restoring db's archive to 2026-12-07T11:02:00Z") {
		t.Fatalf("restore --apply: %v\n%s", err, out)
	}
	created := get(t, c, "db-before-delete", &v1alpha1.PostgresCluster{})
	if from := created.Spec.Bootstrap.FromBackup; from == nil || from.TargetTime == nil || from.ObjectStore.Path != "shop/db" {
		t.Errorf("created bootstrap %+v", created.Spec.Bootstrap)
	}
	existing := archived(func(pg *v1alpha1.PostgresCluster) { pg.Name = "db-before-delete" })
	_, _, err = run(t, []client.Object{archived(nil), existing}, "pg", "restore", "db", "db-before-delete", "--to-time", "2026-12-07T11:02:00Z", "--apply")
	if err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("restore --apply onto an existing cluster: %v", err)
	}

	// Refused, nothing written.
	for args, want := range map[string]string{
		"pg restore db": "--to-time is required",
		"pg restore db --to-time 2026-12-08T00:00:00Z":   "is in the future",
		"pg restore db --to-time 2026-12-07T09:00:00Z":   "is before 2026-12-07T10:00:00Z, the first recoverability point",
		"pg restore nope --to-time 2026-12-07T11:00:00Z": "read PostgresCluster shop/nope",
	} {
		_, c, err := run(t, []client.Object{archived(nil)}, append(strings.Fields(args), "--apply")...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", args, err, want)
		}
		if err := c.List(t.Context(), &list); err != nil || len(list.Items) != 1 {
			t.Errorf("%s: %d clusters after a refusal, %v", args, len(list.Items), err)
		}
	}
}
