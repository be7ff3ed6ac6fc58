package postgres

import (
	"strings"
	"testing"
)

func TestRenderConfig(t *testing.T) {
	base := Config{ListenAddresses: "*", Port: 5432, SocketDir: "/run/postgresql"}
	tests := map[string]struct {
		cfg Config
		// want are lines that must appear; absent are settings that must
		// not.
		want    []string
		absent  []string
		wantErr string
	}{
		"primary with defaults": {
			cfg: base,
			want: []string{
				"listen_addresses = '*'",
				"port = '5432'",
				"unix_socket_directories = '/run/postgresql'",
				"wal_level = 'replica'",
				"hot_standby = 'on'",
				"wal_log_hints = 'on'",
				"max_wal_senders = '10'",
				"wal_keep_size = '512MB'",
				"password_encryption = 'scram-sha-256'",
				"synchronous_standby_names = ''",
				"recovery_target_timeline = 'latest'",
				"log_destination = 'stderr'",
				"logging_collector = 'off'",
			},
			absent: []string{"primary_conninfo", "archive_command", "restore_command", "recovery_target_action", "ssl"},
		},
		"tls: on, with the files, TLS 1.3 at least": {
			cfg: func() Config {
				c := base
				c.TLS = &TLS{CertFile: "/run/postgresql/tls.crt", KeyFile: "/run/postgresql/tls.key", CAFile: "/run/postgresql/ca.crt"}
				return c
			}(),
			want: []string{"ssl = 'on'", "ssl_cert_file = '/run/postgresql/tls.crt'", "ssl_key_file = '/run/postgresql/tls.key'",
				"ssl_ca_file = '/run/postgresql/ca.crt'", "ssl_min_protocol_version = 'TLSv1.3'"},
		},
		"tls without a key is refused": {
			cfg: func() Config {
				c := base
				c.TLS = &TLS{CertFile: "/run/postgresql/tls.crt", CAFile: "/run/postgresql/ca.crt"}
				return c
			}(),
			wantErr: "TLS needs",
		},
		"standby verifying its primary": {
			cfg: func() Config {
				c := base
				c.Primary = &ConnInfo{Host: "pg-1.pg.ns.svc.cluster.local", Port: 5432, User: ReplicationUser, PassFile: "/p", ApplicationName: "pg-2",
					SSLMode: "verify-full", SSLRootCert: "/run/postgresql/ca.crt"}
				return c
			}(),
			want: []string{`primary_conninfo = 'host=''pg-1.pg.ns.svc.cluster.local'' port=''5432'' user=''streaming_replica'' passfile=''/p'' application_name=''pg-2'' sslmode=''verify-full'' sslrootcert=''/run/postgresql/ca.crt'''`},
		},
		"archiving: standbys archive too, so that a failover leaves no gap": {
			cfg: func() Config {
				c := base
				c.Archive = &Archive{Command: "/m wal-archive %p", Timeout: "300s"}
				return c
			}(),
			want: []string{"archive_mode = 'always'", "archive_command = '/m wal-archive %p'", "archive_timeout = '300s'"},
		},
		// Without archiving, nothing is written: PostgreSQL's default is
		// off, and a new line would restart every instance of a cluster.
		"no archiving": {cfg: base, absent: []string{"archive_mode", "archive_timeout"}},
		"a recovery to a point in time promotes there": {
			cfg: func() Config {
				c := base
				c.Recovery = &Recovery{RestoreCommand: "r %f %p", TargetTime: "2026-12-07 06:00:00+00"}
				return c
			}(),
			want:   []string{"restore_command = 'r %f %p'", "recovery_target_action = 'promote'", "recovery_target_time = '2026-12-07 06:00:00+00'"},
			absent: []string{"recovery_target_lsn", "recovery_target_name"},
		},
		"standby": {
			cfg: func() Config {
				c := base
				c.Primary = &ConnInfo{Host: "10.0.0.1", Port: 5432, User: ReplicationUser, PassFile: "/etc/pg/pgpass", ApplicationName: "pg-2"}
				return c
			}(),
			// libpq's quotes inside the file's quotes, doubled.
			want: []string{`primary_conninfo = 'host=''10.0.0.1'' port=''5432'' user=''streaming_replica'' passfile=''/etc/pg/pgpass'' application_name=''pg-2'' sslmode=''prefer'''`},
		},
		"synchronous ANY 1 of 2": {
			cfg: func() Config {
				c := base
				c.Synchronous = Synchronous{Number: 1, Standbys: []string{"pg-2", `odd"name`}}
				return c
			}(),
			want: []string{`synchronous_standby_names = 'ANY 1 ("pg-2","odd""name")'`},
		},
		"settings and the user's parameters, sorted and quoted": {
			cfg: func() Config {
				c := base
				c.MaxWALSenders = 4
				c.WALKeepSize = "1GB"
				c.Parameters = map[string]string{"work_mem": "4MB", "Cluster_Name": "it's", "shared_preload_libraries": "pg_stat_statements"}
				return c
			}(),
			want: []string{"max_wal_senders = '4'", "wal_keep_size = '1GB'", "cluster_name = 'it''s'\nshared_preload_libraries = 'pg_stat_statements'\nwork_mem = '4MB'"},
		},
		"owned parameter refused": {
			cfg:     func() Config { c := base; c.Parameters = map[string]string{"port": "1"}; return c }(),
			wantErr: "owned by the operator: port",
		},
		"password in primary_conninfo refused": {
			cfg: func() Config {
				c := base
				c.Primary = &ConnInfo{Host: "h", User: ReplicationUser, Password: "secret"}
				return c
			}(),
			wantErr: "give a passfile",
		},
		"more synchronous standbys than named": {
			cfg:     func() Config { c := base; c.Synchronous = Synchronous{Number: 2, Standbys: []string{"a"}}; return c }(),
			wantErr: "asks for 2 of 1 standbys",
		},
		"synchronous without standbys": {
			cfg:     func() Config { c := base; c.Synchronous = Synchronous{Number: 1}; return c }(),
			wantErr: "names none",
		},
		"newline in a standby name": {
			cfg:     func() Config { c := base; c.Synchronous = Synchronous{Number: 1, Standbys: []string{"a\nb"}}; return c }(),
			wantErr: "newline",
		},
		"no port": {
			cfg:     Config{SocketDir: "/s"},
			wantErr: "port 0",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := RenderConfig(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w+"\n") {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("unexpected %q in:\n%s", a, got)
				}
			}
		})
	}
}

func TestRenderHBA(t *testing.T) {
	tests := map[string]struct {
		superuserAccess bool
		network         HBANetwork
		want            []string
	}{
		"no superuser access": {false, HBAPlainText, []string{
			"local all all trust",
			"host replication streaming_replica all scram-sha-256",
			"host replication streaming_backup all scram-sha-256",
			"host all postgres all reject",
			"host all all all scram-sha-256",
		}},
		"superuser access": {true, HBAPlainText, []string{
			"local all all trust",
			"host replication streaming_replica all scram-sha-256",
			"host replication streaming_backup all scram-sha-256",
			"host all all all scram-sha-256",
		}},
		// Every TCP line needs TLS: sslmode=disable matches none. The
		// socket stays trusted.
		"tls": {false, HBAOverTLS, []string{
			"local all all trust",
			"hostssl replication streaming_replica all scram-sha-256",
			"hostssl replication streaming_backup all scram-sha-256",
			"hostssl all postgres all reject",
			"hostssl all all all scram-sha-256",
		}},
		"tls and superuser access": {true, HBAOverTLS, []string{
			"local all all trust",
			"hostssl replication streaming_replica all scram-sha-256",
			"hostssl replication streaming_backup all scram-sha-256",
			"hostssl all all all scram-sha-256",
		}},
		// Waiting for its certificate: nobody connects over TCP, not even
		// with a password; the manager's socket stays.
		"socket only": {true, HBASocketOnly, []string{
			"local all all trust",
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, line := range strings.Split(RenderHBA(tc.superuserAccess, tc.network), "\n") {
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				got = append(got, strings.Join(strings.Fields(line), " "))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got rules\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
