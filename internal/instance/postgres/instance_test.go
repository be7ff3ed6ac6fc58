package postgres_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// testTimeout bounds each test that runs PostgreSQL: a few times what it
// takes on a busy machine.
const testTimeout = 2 * time.Minute

// TestInitStartConnect makes a cluster with InitDB, starts it and logs in
// as the application's owner over TCP; the superuser cannot, a password
// change takes effect for new logins, and a clean stop shows in the control
// data.
func TestInitStartConnect(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-a")
	// A value with a quote and a backslash checks the quoting of
	// operator.conf against the server's parser.
	inst.Settings.Parameters = map[string]string{"cluster_name": `it's a \ test`, "work_mem": "8MB"}
	if err := inst.InitDB(ctx, postgres.InitOptions{
		SuperuserPassword:   "super-secret",
		ReplicationPassword: "repl-secret",
		Database:            "app",
		Owner:               "app",
		OwnerPassword:       "app's pässword",
	}); err != nil {
		t.Fatal(err)
	}
	if !inst.Initialized() {
		t.Fatal("not initialized after InitDB")
	}
	p := postgrestest.Start(ctx, t, inst)

	conn, err := postgres.Connect(ctx, postgrestest.TCP(inst, "app", "app's pässword", "app"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var user, db, clusterName, workMem string
	if err := conn.QueryRow(ctx, "SELECT current_user, current_database(), current_setting('cluster_name'), current_setting('work_mem')").Scan(&user, &db, &clusterName, &workMem); err != nil {
		t.Fatal(err)
	}
	if user != "app" || db != "app" || clusterName != `it's a \ test` || workMem != "8MB" {
		t.Errorf("got user %q, database %q, cluster_name %q, work_mem %q", user, db, clusterName, workMem)
	}
	expectLoginRefused(ctx, t, postgrestest.TCP(inst, "app", "wrong", "app"), "28P01")
	// The superuser's password is right, but pg_hba.conf rejects it over
	// the network.
	expectLoginRefused(ctx, t, postgrestest.TCP(inst, postgres.SuperUser, "super-secret", "postgres"), "28000")

	if err := inst.SetPassword(ctx, "app", "new password"); err != nil {
		t.Fatal(err)
	}
	newConn, err := postgres.Connect(ctx, postgrestest.TCP(inst, "app", "new password", "app"))
	if err != nil {
		t.Fatalf("login with the new password: %v", err)
	}
	newConn.Close(ctx)
	expectLoginRefused(ctx, t, postgrestest.TCP(inst, "app", "app's pässword", "app"), "28P01")

	state, err := inst.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if state.InRecovery || state.TimelineID != 1 || state.CurrentLSN == 0 || state.SystemIdentifier == 0 {
		t.Errorf("state of a new primary: %+v", state)
	}

	if err := p.Stop(ctx, postgres.StopFast); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Errorf("exit after a fast shutdown: %v", err)
	}
	cd, err := inst.ControlData(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !cd.CleanShutdown() || cd.ClusterState != postgres.ClusterStateShutDown || cd.TimelineID != 1 || cd.SystemIdentifier != state.SystemIdentifier {
		t.Errorf("control data after a fast shutdown: state %q, timeline %d, system identifier %d (want %d)", cd.ClusterState, cd.TimelineID, cd.SystemIdentifier, state.SystemIdentifier)
	}
	if ran, err := inst.RanAsPrimary(ctx); err != nil || !ran {
		t.Errorf("a new cluster, shut down: ran as a primary %v (%v)", ran, err)
	}
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "x"}); err == nil {
		t.Error("InitDB of an initialized data directory succeeded")
	}
}

func expectLoginRefused(ctx context.Context, t *testing.T, c postgres.ConnInfo, sqlState string) {
	t.Helper()
	conn, err := postgres.Connect(ctx, c)
	if err == nil {
		conn.Close(ctx)
		t.Errorf("login as %s succeeded", c.User)
		return
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != sqlState {
		t.Errorf("login as %s: got %v, want SQLSTATE %s", c.User, err, sqlState)
	}
}

// TestSCRAMVerifierMatchesServer lets the server compute verifiers from
// passwords (the only place where a test sends one), then computes them here
// with the server's salt: they must be equal, non-ASCII passwords included,
// which SASLprep prepares first.
func TestSCRAMVerifierMatchesServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-scram")
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl"}); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, inst)
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	passwords := []string{
		"pencil",
		"a 'quoted' \\ password:with;punctuation",
		"pässwörd",          // NFKC leaves it
		"non\u00a0breaking", // a non-ASCII space becomes a space
		"soft\u00adhyphen",  // mapped to nothing
		"\ufb01ligature",    // NFKC: "fi"
		"\u2168 roman nine", // NFKC: "IX"
		"ctrl\u0085é",       // prohibited: used as it is
		"zero\u200bwidth",   // a space for PostgreSQL, nothing for RFC 3454 B.1
		"emoji \U0001F600",  // unassigned in Unicode 3.2: used as it is
		"\u05d0\u05d1",      // right-to-left alone
		"\u05d0a\u05d1",     // right-to-left mixed with left-to-right: as it is
		"\u00ad",            // mapped to nothing entirely: used as it is
		"tab\tand ascii",    // ASCII, a control included: as it is
		"\u3000ideographic", // a non-ASCII space
	}
	for i, password := range passwords {
		role := "vector" + strconv.Itoa(i)
		if _, err := conn.Exec(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD $$"+password+"$$"); err != nil {
			t.Fatal(err)
		}
		var server string
		if err := conn.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", role).Scan(&server); err != nil {
			t.Fatal(err)
		}
		salt, iterations := saltOf(t, server)
		ours, err := postgres.SCRAMVerifierWithSalt(password, salt, iterations)
		if err != nil {
			t.Fatal(err)
		}
		if ours != server {
			t.Errorf("password %q: verifier %s, server's %s", password, ours, server)
		}
	}

	// A verifier set here lets the password log in (pgx does the client's
	// side of SCRAM).
	if err := inst.SetPassword(ctx, "vector0", "pencil2"); err != nil {
		t.Fatal(err)
	}
	login, err := postgres.Connect(ctx, postgrestest.TCP(inst, "vector0", "pencil2", "postgres"))
	if err != nil {
		t.Fatalf("login with a password set as a verifier: %v", err)
	}
	login.Close(ctx)

	// And passwords that SASLprep changes (NFKC, a non-ASCII space, a zero
	// width space) log in with libpq's psql, whose SASLprep is PostgreSQL's
	// own (pgx prepares with PRECIS, which differs).
	for _, password := range []string{"\ufb01 p\u00e4ss\u00a0word", "zero\u200bwidth"} {
		if err := inst.SetPassword(ctx, "vector1", password); err != nil {
			t.Fatal(err)
		}
		psql := exec.CommandContext(ctx, filepath.Join(postgrestest.BinDir(t), "psql"), "-X", "-At", "-c", "SELECT current_user",
			fmt.Sprintf("host=%s port=%d user=vector1 dbname=postgres sslmode=disable", inst.ListenAddress, inst.Port))
		psql.Env = []string{"PGPASSWORD=" + password, "LC_ALL=C"}
		if out, err := psql.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "vector1" {
			t.Errorf("psql login with password %q set as a verifier: %v: %s", password, err, out)
		}
	}
}

// saltOf reads the salt and iteration count of a stored verifier.
func saltOf(t *testing.T, verifier string) ([]byte, int) {
	t.Helper()
	rest, ok := strings.CutPrefix(verifier, "SCRAM-SHA-256$")
	if !ok {
		t.Fatalf("not a SCRAM verifier: %q", verifier)
	}
	params, _, _ := strings.Cut(rest, "$")
	iter, saltB64, _ := strings.Cut(params, ":")
	n, err := strconv.Atoi(iter)
	if err != nil {
		t.Fatal(err)
	}
	salt, err := base64.StdEncoding.DecodeString(saltB64)
	if err != nil {
		t.Fatal(err)
	}
	return salt, n
}

// An instance that must serve TLS and has no certificate yet accepts no
// TCP connection, not even with the right password (28000: no pg_hba
// line); its manager's socket still works.
func TestRefuseTCPWithoutTLS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	inst := postgrestest.NewInstance(t, "pg-no-cert")
	inst.Settings.RefuseTCPWithoutTLS = true
	if err := inst.InitDB(ctx, postgres.InitOptions{ReplicationPassword: "repl", Database: "app", Owner: "app", OwnerPassword: "app"}); err != nil {
		t.Fatal(err)
	}
	postgrestest.Start(ctx, t, inst)
	expectLoginRefused(ctx, t, postgrestest.TCP(inst, "app", "app", "app"), "28000")
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatalf("the socket refused the manager: %v", err)
	}
	conn.Close(ctx)
}
