package main

import (
	"strings"
	"testing"
)

// The psql command make run prints verifies the server, name and chain,
// with the CA it saves from the application's Secret first.
func TestPsqlCommandVerifiesTheServer(t *testing.T) {
	got, err := psqlCommand("default", "db", "db-rw", "127.0.0.1:40123")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`kubectl get secret -n default db-app -o jsonpath='{.data.ca\.crt}' | base64 -d > db-ca.crt`,
		`psql "host=localhost hostaddr=127.0.0.1 port=40123 user=app dbname=app sslmode=verify-full sslrootcert=db-ca.crt"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the command lacks %s:\n%s", want, got)
		}
	}
	if _, err := psqlCommand("default", "db", "db-rw", "no port"); err == nil {
		t.Error("an address without a port gave a command")
	}
}
