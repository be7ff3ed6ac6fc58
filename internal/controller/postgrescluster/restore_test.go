package postgrescluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit"
)

// restoreBackup is a successful backup of the BackupJob nightly, made
// minute minutes after a fixed time; cluster is its source-postgrescluster
// annotation, "" for a backup of a plain claim.
type restoreBackup struct {
	name, kind, cluster string
	minute              int
}

func (b restoreBackup) meta() metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name: b.name, Namespace: "team",
		Labels:            map[string]string{v1alpha1.BackupJobLabel: "nightly", v1alpha1.BackupResultLabel: "Succeeded"},
		CreationTimestamp: metav1.NewTime(time.Date(2030, 1, 1, 0, b.minute, 0, 0, time.UTC)),
	}
	if b.cluster != "" {
		m.Annotations = map[string]string{v1alpha1.BackupSourceClusterAnnotation: b.cluster}
	}
	return m
}

// restoreReconciler is a reconciler whose API reader holds the claim
// backups of backups and answers a list of VolumeSnapshots with the
// snapshot ones, or with snapshotErr.
func restoreReconciler(t *testing.T, backups []restoreBackup, snapshotErr error) *Reconciler {
	t.Helper()
	var claims []client.Object
	var snapshots []unstructured.Unstructured
	for _, b := range backups {
		m := b.meta()
		if b.kind == "VolumeSnapshot" {
			s := unstructured.Unstructured{}
			s.SetGroupVersionKind(schema.GroupVersionKind{Group: "snapshot.storage.k8s.io", Version: "v1", Kind: "VolumeSnapshot"})
			s.SetName(m.Name)
			s.SetNamespace(m.Namespace)
			s.SetLabels(m.Labels)
			s.SetAnnotations(m.Annotations)
			s.SetCreationTimestamp(m.CreationTimestamp)
			snapshots = append(snapshots, s)
			continue
		}
		claims = append(claims, &corev1.PersistentVolumeClaim{ObjectMeta: m})
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(claims...).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if u, ok := list.(*unstructured.UnstructuredList); ok && u.GroupVersionKind() == snapshotList {
				if snapshotErr != nil {
					return snapshotErr
				}
				u.Items = append(u.Items, snapshots...)
				return nil
			}
			return c.List(ctx, list, opts...)
		}}).Build()
	return &Reconciler{Base: kit.Base{Client: c, APIReader: c}}
}

// A cluster restored from a BackupJob starts from its newest successful
// backup of a PostgresCluster, or the one named. VolumeSnapshots not served
// means no snapshot backups; any other error listing them is returned, not
// taken for "none", which would restore an older claim backup instead of a
// newer snapshot. A backup of a plain claim (no source-postgrescluster
// annotation) holds no data directory and is never chosen; when only such
// backups exist the message says the BackupJob is not a backup of a
// PostgresCluster.
func TestRestoreSource(t *testing.T) {
	older := restoreBackup{name: "nightly-1", kind: "PersistentVolumeClaim", cluster: "db", minute: 1}
	newer := restoreBackup{name: "nightly-2", kind: "VolumeSnapshot", cluster: "db", minute: 2}
	plain := restoreBackup{name: "nightly-3", kind: "PersistentVolumeClaim", minute: 3}
	plainSnapshot := restoreBackup{name: "nightly-4", kind: "VolumeSnapshot", minute: 4}
	notServed := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "snapshot.storage.k8s.io", Kind: "VolumeSnapshot"}, SearchedVersions: []string{"v1"}}
	tests := map[string]struct {
		backups     []restoreBackup
		name        string
		snapshotErr error
		// want is the kind and name of the source chosen, or wantErr what
		// the error (the BackupNotFound condition's message) says.
		want    string
		wantErr []string
	}{
		"the newest, a snapshot":      {backups: []restoreBackup{older, newer}, want: "VolumeSnapshot/nightly-2"},
		"the one named":               {backups: []restoreBackup{older, newer}, name: "nightly-1", want: "PersistentVolumeClaim/nightly-1"},
		"snapshots not served":        {backups: []restoreBackup{older}, snapshotErr: notServed, want: "PersistentVolumeClaim/nightly-1"},
		"snapshot API not found":      {backups: []restoreBackup{older}, snapshotErr: apierrors.NewNotFound(schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots"}, ""), want: "PersistentVolumeClaim/nightly-1"},
		"snapshots unreadable":        {backups: []restoreBackup{older, newer}, snapshotErr: apierrors.NewServiceUnavailable("etcdserver: request timed out"), wantErr: []string{"list the VolumeSnapshots of BackupJob nightly", "request timed out"}},
		"snapshots forbidden":         {backups: []restoreBackup{older, newer}, snapshotErr: apierrors.NewForbidden(schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots"}, "", errors.New("no RBAC")), wantErr: []string{"list the VolumeSnapshots"}},
		"newer plain backups skipped": {backups: []restoreBackup{older, newer, plain, plainSnapshot}, want: "VolumeSnapshot/nightly-2"},
		"only plain backups": {backups: []restoreBackup{plain, plainSnapshot},
			wantErr: []string{"spec.bootstrap.fromBackup.backupJob", "BackupJob nightly is not a backup of a PostgresCluster"}},
		"a plain backup named": {backups: []restoreBackup{older, plain}, name: "nightly-3",
			wantErr: []string{"spec.bootstrap.fromBackup names backup nightly-3", "not a backup of a PostgresCluster"}},
		"no backup yet": {wantErr: []string{"BackupJob nightly has no successful backup yet"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := restoreReconciler(t, tt.backups, tt.snapshotErr)
			pg := &v1alpha1.PostgresCluster{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: "team"},
				Spec: v1alpha1.PostgresClusterSpec{Bootstrap: &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{BackupJob: "nightly", Name: tt.name}}}}
			ref, err := r.restoreSource(t.Context(), pg)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("restores from %s/%s, want an error", ref.Kind, ref.Name)
				}
				for _, want := range tt.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				// A failed read is retried; a missing backup is the
				// condition BackupNotFound.
				missing := errors.As(err, &noBackupError{})
				if wantMissing := tt.snapshotErr == nil; missing != wantMissing {
					t.Errorf("error %q is a missing backup: %t, want %t", err, missing, wantMissing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := ref.Kind + "/" + ref.Name; got != tt.want {
				t.Errorf("restores from %s, want %s", got, tt.want)
			}
			if (ref.Kind == "VolumeSnapshot") != (ref.APIGroup != nil && *ref.APIGroup == "snapshot.storage.k8s.io") {
				t.Errorf("apiGroup %v for a %s", ref.APIGroup, ref.Kind)
			}
		})
	}
}
