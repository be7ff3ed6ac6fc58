package postgres

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// describeConfigSample is a few lines of postgres --describe-config.
const describeConfigSample = "work_mem\tuser\tResource Usage / Memory\tINTEGER\t4096\t64\t2147483647\tSets the maximum memory.\t\n" +
	"shared_buffers\tpostmaster\tResource Usage / Memory\tINTEGER\t1024\t16\t1073741823\tSets the number of shared memory buffers.\t\n" +
	"primary_conninfo\tsighup\tReplication / Standby Servers\tSTRING\t\t\t\tSets the connection string.\t\n"

// acceptedBy records, as CheckParameters would, that the PostgreSQL of
// binDir takes params, and returns them.
func acceptedBy(binDir string, params map[string]string) map[string]string {
	checkedParameters.Lock()
	defer checkedParameters.Unlock()
	checkedParameters.m[binDir+"\x00"+renderParameters(params)] = nil
	return params
}

// TestConfigureChanges follows an instance's owned files through role and
// settings changes, and what each change needs, without a server nor
// PostgreSQL: the parameters' contexts come from a sample of postgres
// --describe-config, and their check is taken as passed.
func TestConfigureChanges(t *testing.T) {
	binDir := filepath.Join(t.TempDir(), "bin")
	contextsByBinDir.Store(binDir, parseDescribeConfig(describeConfigSample))
	dataDir := t.TempDir()
	initdbConf := "max_connections = 100\n"
	if err := os.WriteFile(filepath.Join(dataDir, mainConfFile), []byte(initdbConf), 0o600); err != nil {
		t.Fatal(err)
	}
	inst := &Instance{Name: "pg-2", BinDir: binDir, DataDir: dataDir, SocketDir: "/run/pg", Port: 5432, Log: logr.Discard()}
	primary := ConnInfo{Host: "10.0.0.1", Port: 5432, User: ReplicationUser, PassFile: "/etc/pgpass"}

	steps := []struct {
		name    string
		do      func() (Change, error)
		want    Change
		standby bool
	}{
		{"first configuration: the include appears", inst.ConfigurePrimary, RestartNeeded, false},
		{"same again", inst.ConfigurePrimary, NoChange, false},
		{"a user-context parameter", func() (Change, error) {
			inst.Settings.Parameters = acceptedBy(binDir, map[string]string{"work_mem": "8MB"})
			return inst.ConfigurePrimary()
		}, ReloadNeeded, false},
		{"a postmaster parameter", func() (Change, error) {
			inst.Settings.Parameters = acceptedBy(binDir, map[string]string{"work_mem": "8MB", "shared_buffers": "1GB"})
			return inst.ConfigurePrimary()
		}, RestartNeeded, false},
		{"an extension's parameter, unknown to postgres", func() (Change, error) {
			inst.Settings.Parameters = acceptedBy(binDir, map[string]string{"work_mem": "8MB", "shared_buffers": "1GB", "pg_stat_statements.max": "100"})
			return inst.ConfigurePrimary()
		}, RestartNeeded, false},
		{"primary becomes standby", func() (Change, error) { return inst.ConfigureStandby(primary) }, RestartNeeded, true},
		{"standby follows another primary", func() (Change, error) {
			other := primary
			other.Host = "10.0.0.3"
			return inst.ConfigureStandby(other)
		}, ReloadNeeded, true},
		{"superuser access: pg_hba.conf only", func() (Change, error) {
			inst.Settings.SuperuserAccess = true
			other := primary
			other.Host = "10.0.0.3"
			return inst.ConfigureStandby(other)
		}, ReloadNeeded, true},
		{"standby becomes primary", inst.ConfigurePrimary, RestartNeeded, false},
	}
	for _, s := range steps {
		got, err := s.do()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got != s.want {
			t.Errorf("%s: got %s, want %s", s.name, got, s.want)
		}
		standby, err := inst.StandbyConfigured()
		if err != nil {
			t.Fatal(err)
		}
		if standby != s.standby {
			t.Errorf("%s: standby.signal present %v, want %v", s.name, standby, s.standby)
		}
	}

	main, err := os.ReadFile(filepath.Join(dataDir, mainConfFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(main), initdbConf) || strings.Count(string(main), includeOwnedCfg) != 1 ||
		!strings.HasSuffix(string(main), includeOwnedCfg+"\n") {
		t.Errorf("postgresql.conf: initdb's settings kept, the include once and last; got:\n%s", main)
	}
	hba, err := os.ReadFile(filepath.Join(dataDir, hbaFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(hba) != RenderHBA(true, HBAPlainText) {
		t.Errorf("pg_hba.conf:\n%s", hba)
	}
	for _, f := range []string{ownedConfFile, hbaFile, mainConfFile} {
		fi, err := os.Stat(filepath.Join(dataDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v", f, fi.Mode())
		}
	}

	withPassword := primary
	withPassword.PassFile = ""
	withPassword.Password = "secret"
	if _, err := inst.ConfigureStandby(withPassword); err == nil || !strings.Contains(err.Error(), "passfile") {
		t.Errorf("a primary_conninfo with a password: got %v", err)
	}
}

func TestChangedParameters(t *testing.T) {
	before := parseOwnedConf("# comment\nport = '5432'\nwork_mem = '4MB'\nprimary_conninfo = 'host=''a'''\n")
	after := parseOwnedConf("port = '5432'\nwork_mem = '8MB'\nmax_connections = '10'\n")
	got := changedParameters(before, after)
	want := map[string]bool{"work_mem": true, "primary_conninfo": true, "max_connections": true}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for _, n := range got {
		if !want[n] {
			t.Errorf("unexpected %s in %v", n, got)
		}
	}
}
