package instance

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"example.com/platform-operator/internal/objectstore"
)

// claimOnce asks the store once per configuration: marked, it does not go
// to the store at all, so a store that answers nothing is never noticed;
// a changed configuration (another location, another owner) goes to it
// again. The first claim itself is the e2e tests' (a real store).
func TestClaimOnceAsksTheStoreOncePerConfiguration(t *testing.T) {
	// A port nothing listens on: every request to it fails at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close()

	loc := objectstore.Location{Endpoint: endpoint, Bucket: "backups", Prefix: "ns/db", Region: objectstore.DefaultRegion, AccessKeyID: "k", SecretAccessKey: "s"}
	store, err := objectstore.New(loc)
	if err != nil {
		t.Fatal(err)
	}
	configPath := filepath.Join(t.TempDir(), archiveConfigFile)
	claimed := archiveConfig{Archive: &loc, Owner: objectstore.Owner{UID: "uid-1", Namespace: "ns", Cluster: "db"}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if err := claimOnce(ctx, store, configPath, claimed); err == nil {
		t.Fatal("claimOnce without a mark succeeded against a store that answers nothing: it did not ask the store")
	}
	// As a claim that succeeded leaves it.
	if err := writeClaimMark(configPath, claimed); err != nil {
		t.Fatal(err)
	}
	if err := claimOnce(ctx, store, configPath, claimed); err != nil {
		t.Fatalf("claimOnce with the configuration's mark went to the store: %v", err)
	}
	other := claimed
	other.Owner.UID = "uid-2"
	if err := claimOnce(ctx, store, configPath, other); err == nil {
		t.Fatal("claimOnce for another owner trusted the first owner's mark")
	}
}
