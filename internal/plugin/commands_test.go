package plugin

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"example.com/platform-operator/api/v1alpha1"
)

// run runs the plugin's command line args against objs in a fake API
// server, in namespace shop, and returns what it printed, the client to
// read the objects after, and the error.
func run(t *testing.T, objs []client.Object, args ...string) (string, client.Client, error) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.PostgresCluster{}, &v1alpha1.BackupJob{}).Build()
	var out bytes.Buffer
	o := &options{flags: genericclioptions.NewConfigFlags(true),
		streams:    genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out},
		now:        func() time.Time { return time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC) },
		testClient: c}
	cmd := newCommand(o)
	if args[0] == "__complete" {
		// The last argument is the one being completed.
		last := len(args) - 1
		args = append(append(args[:last:last], "-n", "shop"), args[last])
	} else {
		args = append(args, "-n", "shop")
	}
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), c, err
}

func get[T client.Object](t *testing.T, c client.Client, name string, obj T) T {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func inShop(pg *v1alpha1.PostgresCluster) *v1alpha1.PostgresCluster {
	pg.Namespace = "shop"
	return pg
}

func TestFenceAndUnfenceKeepOthersEntries(t *testing.T) {
	pg := inShop(cluster(func(pg *v1alpha1.PostgresCluster) { pg.Spec.FencedInstances = []string{"db-3"} }))
	out, c, err := run(t, []client.Object{pg}, "pg", "fence", "db", "db-2")
	if err != nil || !strings.Contains(out, "postgrescluster/db: fenced db-2") {
		t.Fatalf("fence: %v\n%s", err, out)
	}
	got := get(t, c, "db", &v1alpha1.PostgresCluster{})
	if strings.Join(got.Spec.FencedInstances, ",") != "db-3,db-2" {
		t.Errorf("fencedInstances %v, want db-3 kept and db-2 added", got.Spec.FencedInstances)
	}
	got.ResourceVersion = ""
	out, c, err = run(t, []client.Object{got}, "pg", "unfence", "db", "db-3")
	if err != nil || !strings.Contains(out, "unfenced db-3") {
		t.Fatalf("unfence: %v\n%s", err, out)
	}
	if l := get(t, c, "db", &v1alpha1.PostgresCluster{}).Spec.FencedInstances; strings.Join(l, ",") != "db-2" {
		t.Errorf("fencedInstances %v after unfencing db-3, want db-2", l)
	}
}

func TestFencePrimaryRefused(t *testing.T) {
	out, c, err := run(t, []client.Object{inShop(cluster(nil))}, "pg", "fence", "db", "db-1")
	if err == nil || !strings.Contains(err.Error(), "--allow-primary") {
		t.Fatalf("fencing the primary: %v\n%s", err, out)
	}
	if got := get(t, c, "db", &v1alpha1.PostgresCluster{}).Spec.FencedInstances; len(got) != 0 {
		t.Errorf("fencedInstances %v after a refusal", got)
	}
}

func TestSwitchoverSetsPrimary(t *testing.T) {
	pg := inShop(cluster(func(pg *v1alpha1.PostgresCluster) { pg.Status.Instances[1].LagBytes = 500 }))
	out, c, err := run(t, []client.Object{pg}, "pg", "switchover", "db")
	if err != nil || !strings.Contains(out, "switching over from db-1 to db-3") {
		t.Fatalf("switchover: %v\n%s", err, out)
	}
	if got := get(t, c, "db", &v1alpha1.PostgresCluster{}).Spec.Primary; got != "db-3" {
		t.Errorf("spec.primary %q, want db-3, the replica least behind", got)
	}
}

func TestBackupRunNowAndPin(t *testing.T) {
	bj := &v1alpha1.BackupJob{
		ObjectMeta: metav1.ObjectMeta{Name: "db-nightly", Namespace: "shop"},
		Spec:       v1alpha1.BackupJobSpec{Schedule: "@daily", Source: v1alpha1.BackupSource{PostgresCluster: "db"}},
		Status: v1alpha1.BackupJobStatus{Backups: []v1alpha1.Backup{
			{Name: "db-nightly-1", Kind: v1alpha1.VolumeBackup, Result: v1alpha1.BackupSucceeded}}},
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "db-nightly-1", Namespace: "shop",
		Labels: map[string]string{v1alpha1.BackupJobLabel: "db-nightly"}}}
	stranger := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"}}
	objs := func() []client.Object {
		return []client.Object{inShop(cluster(nil)), bj.DeepCopy(), claim.DeepCopy(), stranger.DeepCopy()}
	}

	out, c, err := run(t, objs(), "pg", "backup", "db")
	if err != nil || !strings.Contains(out, "backupjob/db-nightly: run requested (spec.runNow=2026-12-07T12:00:00Z)") {
		t.Fatalf("pg backup: %v\n%s", err, out)
	}
	if got := get(t, c, "db-nightly", &v1alpha1.BackupJob{}).Spec.RunNow; got != "2026-12-07T12:00:00Z" {
		t.Errorf("spec.runNow %q", got)
	}

	out, c, err = run(t, objs(), "bj", "pin", "db-nightly", "db-nightly-1")
	if err != nil || !strings.Contains(out, "pinned") {
		t.Fatalf("pin: %v\n%s", err, out)
	}
	labels := get(t, c, "db-nightly-1", &corev1.PersistentVolumeClaim{}).Labels
	if labels[v1alpha1.PinnedLabel] != "true" || labels[v1alpha1.BackupJobLabel] != "db-nightly" {
		t.Errorf("labels %v after pin", labels)
	}
	if _, _, err := run(t, objs(), "bj", "pin", "db-nightly", "data"); err == nil || !strings.Contains(err.Error(), "lists no backup data") {
		t.Errorf("pinning a claim that is not a backup: %v", err)
	}
}

func TestVersionCommandPrintsWhatVersionFlagPrints(t *testing.T) {
	printed := func(arg string) string {
		var out bytes.Buffer
		cmd := NewCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &out})
		cmd.SetArgs([]string{arg})
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		return out.String()
	}
	byFlag, byCommand := printed("--version"), printed("version")
	if !strings.HasPrefix(byCommand, "kubectl platform version ") || byCommand != byFlag {
		t.Errorf("version printed %q, --version %q", byCommand, byFlag)
	}
}
