package instance

import (
	"os"
	"testing"

	"example.com/platform-operator/internal/instance/postgres"
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
