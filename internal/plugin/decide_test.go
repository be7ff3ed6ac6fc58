package plugin

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/backupjob"
)

// cluster is db with three instances, db-1 the primary, changed by change.
func cluster(change func(*v1alpha1.PostgresCluster)) *v1alpha1.PostgresCluster {
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       v1alpha1.PostgresClusterSpec{Instances: 3},
		Status: v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-1", TargetPrimary: "db-1",
			Instances: []v1alpha1.PostgresInstanceStatus{
				{Name: "db-1", Role: "primary", Ready: true},
				{Name: "db-2", Role: "replica", Ready: true, LagBytes: 100},
				{Name: "db-3", Role: "replica", Ready: true, LagBytes: 100},
			}},
	}
	if change != nil {
		change(pg)
	}
	return pg
}

func TestSwitchoverTarget(t *testing.T) {
	tests := []struct {
		name, want, err string
		change          func(*v1alpha1.PostgresCluster)
	}{
		{name: "equal lag: the first by name", want: "db-2"},
		{name: "the least behind", want: "db-3", change: func(pg *v1alpha1.PostgresCluster) { pg.Status.Instances[2].LagBytes = 0 }},
		{name: "not a fenced one", want: "db-3", change: func(pg *v1alpha1.PostgresCluster) { pg.Spec.FencedInstances = []string{"db-2"} }},
		{name: "not one fenced for a backup", want: "db-3", change: func(pg *v1alpha1.PostgresCluster) { pg.Status.Instances[1].Fenced = true }},
		{name: "not one that is not ready", want: "db-2", change: func(pg *v1alpha1.PostgresCluster) { pg.Status.Instances[2].Ready = false }},
		{name: "none", err: "no ready, unfenced replica", change: func(pg *v1alpha1.PostgresCluster) {
			pg.Status.Instances[1].Ready, pg.Status.Instances[2].Role = false, ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := switchoverTarget(cluster(tt.change))
			if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %q, %v; want %q, %q", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestCheckPromotable(t *testing.T) {
	tests := []struct {
		name, instance, err string
		change              func(*v1alpha1.PostgresCluster)
	}{
		{name: "a ready replica", instance: "db-2"},
		{name: "the primary", instance: "db-1", err: "already the primary"},
		{name: "unknown", instance: "db-7", err: "has no instance db-7"},
		{name: "fenced", instance: "db-2", err: "fenced", change: func(pg *v1alpha1.PostgresCluster) { pg.Spec.FencedInstances = []string{"db-2"} }},
		{name: "not streaming", instance: "db-2", err: "not ready", change: func(pg *v1alpha1.PostgresCluster) { pg.Status.Instances[1].Ready = false }},
		{name: "hibernating", instance: "db-2", err: "hibernates", change: func(pg *v1alpha1.PostgresCluster) { pg.Spec.Hibernate = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPromotable(cluster(tt.change), tt.instance)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %v, want %q", err, tt.err)
			}
		})
	}
	if err := checkPromotable(cluster(nil), "db-1"); !errors.Is(err, errAlreadyPrimary) {
		t.Errorf("the primary: got %v, want errAlreadyPrimary, which the command reports as nothing to do", err)
	}
}

func TestFencedAfter(t *testing.T) {
	tests := []struct {
		name     string
		current  []string
		instance string
		fence    bool
		want     []string
		changed  bool
	}{
		{"fence", nil, "db-2", true, []string{"db-2"}, true},
		{"fence another, keeping the first", []string{"db-3"}, "db-2", true, []string{"db-3", "db-2"}, true},
		{"fenced already", []string{"db-2"}, "db-2", true, []string{"db-2"}, false},
		{"unfence, keeping the other", []string{"db-3", "db-2"}, "db-3", false, []string{"db-2"}, true},
		{"unfence the last", []string{"db-2"}, "db-2", false, []string{}, true},
		{"not fenced", []string{"db-3"}, "db-2", false, []string{"db-3"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			current := slices.Clone(tt.current)
			got, changed := fencedAfter(current, tt.instance, tt.fence)
			if !slices.Equal(got, tt.want) || changed != tt.changed {
				t.Errorf("got %v, %t; want %v, %t", got, changed, tt.want, tt.changed)
			}
			if !slices.Equal(current, tt.current) {
				t.Errorf("the object's list was changed in place: %v", current)
			}
		})
	}
}

func TestCheckRestartable(t *testing.T) {
	tests := []struct{ name, instance, err string }{
		{"a replica", "db-2", ""},
		{"the primary", "db-1", "switch over first"},
		{"beyond spec.instances", "db-4", "its instances are db-1 to db-3"},
		{"another cluster's", "dbx-2", "is not an instance of PostgresCluster db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkRestartable(cluster(nil), tt.instance)
			if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %v, want %q", err, tt.err)
			}
		})
	}
}

func TestChooseBackupJob(t *testing.T) {
	bj := func(name string) v1alpha1.BackupJob {
		return v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	tests := []struct {
		name    string
		backups []v1alpha1.BackupJob
		named   string
		want    string
		err     string
	}{
		{"the only one", []v1alpha1.BackupJob{bj("a")}, "", "a", ""},
		{"the one named", []v1alpha1.BackupJob{bj("a"), bj("b")}, "b", "b", ""},
		{"several", []v1alpha1.BackupJob{bj("a"), bj("b")}, "", "", "several BackupJobs back up PostgresCluster db (a, b)"},
		{"none", nil, "", "", "no BackupJob backs up PostgresCluster db"},
		{"named, not of the cluster", []v1alpha1.BackupJob{bj("a")}, "c", "", "BackupJob c does not back up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := chooseBackupJob("db", tt.backups, tt.named)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %q, %v; want %q, %q", name, err, tt.want, tt.err)
			}
		})
	}
}

func TestRedactSecret(t *testing.T) {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db-app", Annotations: map[string]string{
			lastAppliedAnnotation: `{"data":{"password":"c2VjcmV0"}}`, "keep": "me"}},
		Data:       map[string][]byte{"password": []byte("secret-password"), "username": []byte("app")},
		StringData: map[string]string{"uri": "postgresql://app:secret-password@db-rw"},
	}
	out := redactSecret(s)
	encoded := out.String()
	for _, leaked := range []string{"secret-password", "c2VjcmV0"} {
		if strings.Contains(encoded, leaked) {
			t.Errorf("the redacted Secret holds %q: %s", leaked, encoded)
		}
	}
	want := map[string]string{"password": "<redacted: 15 bytes>", "username": "<redacted: 3 bytes>", "uri": "<redacted: 38 bytes>"}
	if len(out.Data) != 0 || len(out.StringData) != len(want) {
		t.Errorf("got data %v, stringData %v; want only %v", out.Data, out.StringData, want)
	}
	for k, v := range want {
		if out.StringData[k] != v {
			t.Errorf("%s: got %q, want %q", k, out.StringData[k], v)
		}
	}
	if out.Annotations["keep"] != "me" || string(s.Data["password"]) != "secret-password" {
		t.Error("redaction dropped another annotation or changed the Secret read")
	}
}

func TestCredentialsSecret(t *testing.T) {
	tenant := func(spec *v1alpha1.TenantCredentials, status *v1alpha1.TenantCredentialsStatus) *v1alpha1.Tenant {
		return &v1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
			Spec:   v1alpha1.TenantSpec{Namespaces: []string{"team-a", "team-a-staging"}, Credentials: spec},
			Status: v1alpha1.TenantStatus{Credentials: status}}
	}
	tests := []struct {
		name       string
		tenant     *v1alpha1.Tenant
		ns, secret string
		err        string
	}{
		{"no credentials asked for", tenant(nil, nil), "", "", "asks for no credentials"},
		{"the spec's name", tenant(&v1alpha1.TenantCredentials{SecretName: "ci"}, nil), "team-a", "ci", ""},
		{"the default", tenant(&v1alpha1.TenantCredentials{}, nil), "team-a", "tenant-kubeconfig", ""},
		{"the status's name, the Secret issued", tenant(&v1alpha1.TenantCredentials{SecretName: "new"},
			&v1alpha1.TenantCredentialsStatus{SecretName: "old"}), "team-a", "old", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, secret, err := credentialsSecret(tt.tenant)
			if ns != tt.ns || secret != tt.secret || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %s/%s, %v; want %s/%s, %q", ns, secret, err, tt.ns, tt.secret, tt.err)
			}
		})
	}
}

// The plugin finds a run by the annotation the operator writes.
func TestRunNowAnnotationIsTheOperators(t *testing.T) {
	if runNowAnnotation != backupjob.RunNowAnnotation {
		t.Errorf("runNowAnnotation %q, the operator writes %q", runNowAnnotation, backupjob.RunNowAnnotation)
	}
}
