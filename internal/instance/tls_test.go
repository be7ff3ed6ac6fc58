package instance

import (
	"os"
	"testing"

	"github.com/go-logr/logr/testr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// A tool given the CA verifies the server with it, from a file of its own
// that it removes when done; without, the connection is left to libpq's
// default.
func TestToolTLS(t *testing.T) {
	var c postgres.ConnInfo
	cleanup, err := toolTLS(&c, "")
	if err != nil || c.SSLMode != "" || c.SSLRootCert != "" {
		t.Fatalf("without a CA: %+v, %v", c, err)
	}
	cleanup()

	cleanup, err = toolTLS(&c, "PEM")
	if err != nil {
		t.Fatal(err)
	}
	if c.SSLMode != "verify-full" {
		t.Errorf("sslmode = %q, want verify-full", c.SSLMode)
	}
	data, err := os.ReadFile(c.SSLRootCert)
	if err != nil || string(data) != "PEM" {
		t.Errorf("the CA file holds %q, %v", data, err)
	}
	cleanup()
	if _, err := os.Stat(c.SSLRootCert); !os.IsNotExist(err) {
		t.Errorf("the CA file is still there: %v", err)
	}
}

// A manager restarted while its certificate's Secret cannot be read takes
// the certificate its earlier run wrote into the socket directory, and so
// serves TLS as before; with none written it has none, and its PostgreSQL
// accepts no TCP connection (TestRefuseTCPWithoutTLS).
func TestLoadWrittenTLS(t *testing.T) {
	inst := postgrestest.NewInstance(t, "pg-written-tls")
	fresh := &Manager{pg: inst, log: testr.New(t)}
	fresh.loadWrittenTLS()
	if fresh.tls != nil {
		t.Fatalf("nothing written, yet TLS files %+v", *fresh.tls)
	}
	written := serverCert{cert: []byte("CERT"), key: []byte("KEY"), ca: []byte("CA")}
	files, err := inst.WriteTLS(written.cert, written.key, written.ca)
	if err != nil {
		t.Fatal(err)
	}
	restarted := &Manager{pg: inst, log: testr.New(t)}
	restarted.loadWrittenTLS()
	if restarted.tls == nil || *restarted.tls != files || !restarted.serverCert.equal(written) {
		t.Errorf("after a restart: TLS %+v, certificate %+v; want %+v, %+v", restarted.tls, restarted.serverCert, files, written)
	}
	if s := restarted.settingsOf(&v1alpha1.PostgresCluster{}); s.TLS == nil || !s.RefuseTCPWithoutTLS {
		t.Errorf("settings: TLS %v, RefuseTCPWithoutTLS %v", s.TLS, s.RefuseTCPWithoutTLS)
	}
}
