package plugin

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
)

func TestPsqlInstance(t *testing.T) {
	tests := []struct {
		name, named, want, err string
		replica                bool
		change                 func(*v1alpha1.PostgresCluster)
	}{
		{name: "the primary", want: "db-1"},
		{name: "a replica: the least behind", replica: true, want: "db-3",
			change: func(pg *v1alpha1.PostgresCluster) { pg.Status.Instances[2].LagBytes = 0 }},
		{name: "a replica: not a fenced one", replica: true, want: "db-3",
			change: func(pg *v1alpha1.PostgresCluster) { pg.Spec.FencedInstances = []string{"db-2"} }},
		{name: "named", named: "db-2", want: "db-2"},
		{name: "named, not an instance", named: "db-7", err: "db-7 is not an instance of db"},
		{name: "named and --replica", named: "db-2", replica: true, err: "not both"},
		{name: "no primary", err: "has no primary now",
			change: func(pg *v1alpha1.PostgresCluster) { pg.Status.CurrentPrimary = "" }},
		{name: "no replica ready", replica: true, err: "no replica to connect to",
			change: func(pg *v1alpha1.PostgresCluster) {
				pg.Status.Instances[1].Ready, pg.Status.Instances[2].Ready = false, false
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := psqlInstance(cluster(tt.change), tt.named, tt.replica)
			if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("got %q, %v; want %q, %q", got, err, tt.want, tt.err)
			}
		})
	}
}

func TestPsqlConnection(t *testing.T) {
	secret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-app", Namespace: "shop"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	pg := inShop(cluster(func(pg *v1alpha1.PostgresCluster) {
		pg.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{InitDB: &v1alpha1.PostgresInitDB{Owner: "shop", Database: "orders"}}
	}))
	c, err := psqlConnection(pg, secret(map[string]string{"username": "o'neil", "password": "pw", "dbname": `a\b`, "ca.crt": "CA"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `host=localhost hostaddr=127.0.0.1 port=40123 user='o\'neil' dbname='a\\b' sslmode=verify-full sslrootcert='/tmp/x/ca.crt'`
	if got := c.conninfo(40123, "/tmp/x/ca.crt"); got != want {
		t.Errorf("conninfo\n got %s\nwant %s", got, want)
	}
	if strings.Contains(c.conninfo(1, "ca"), "pw") {
		t.Error("the password is in the connection string")
	}
	// Without username and dbname, the cluster's owner and database.
	c, err = psqlConnection(pg, secret(map[string]string{"password": "pw", "ca.crt": "CA"}))
	if err != nil || c.user != "shop" || c.dbname != "orders" {
		t.Errorf("got %+v, %v; want shop, orders", c, err)
	}
	if _, err := psqlConnection(pg, secret(map[string]string{"password": "pw"})); err == nil || !strings.Contains(err.Error(), "no ca.crt") {
		t.Errorf("no CA: %v", err)
	}
	if _, err := psqlConnection(pg, secret(map[string]string{"ca.crt": "CA"})); err == nil || !strings.Contains(err.Error(), "no password") {
		t.Errorf("no password: %v", err)
	}
}
