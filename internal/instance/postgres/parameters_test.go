package postgres

import (
	"errors"
	"slices"
	"testing"
)

func TestValidateParameters(t *testing.T) {
	tests := map[string]struct {
		in   map[string]string
		want *InvalidParametersError
	}{
		"none":    {in: nil},
		"allowed": {in: map[string]string{"shared_buffers": "1GB", "shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.max": "10000", "log_line_prefix": "%m "}},
		"owned, sorted, any case": {
			in: map[string]string{
				"Port": "1", "wal_level": "logical", "archive_command": "x", "ssl": "on", "ssl_cert_file": "x",
				"primary_conninfo": "x", "recovery_target_time": "x", "unix_socket_permissions": "0777",
				"restore_command": "x", "hba_file": "x", "include": "/etc/passwd", "work_mem": "4MB",
			},
			want: &InvalidParametersError{Owned: []string{
				"Port", "archive_command", "hba_file", "include", "primary_conninfo", "recovery_target_time",
				"restore_command", "ssl", "ssl_cert_file", "unix_socket_permissions", "wal_level",
			}},
		},
		"bad names": {
			in:   map[string]string{"work_mem = 1\nport": "1", "": "x", "a-b": "x"},
			want: &InvalidParametersError{InvalidNames: []string{`""`, `"a-b"`, `"work_mem = 1\nport"`}},
		},
		"same name twice but for case": {
			in:   map[string]string{"work_mem": "1MB", "WORK_MEM": "2MB"},
			want: &InvalidParametersError{InvalidNames: []string{"WORK_MEM", "work_mem"}},
		},
		"newline in value": {
			in:   map[string]string{"work_mem": "1MB\nport = 1", "cluster_name": "a\rb"},
			want: &InvalidParametersError{InvalidValues: []string{"cluster_name", "work_mem"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := ValidateParameters(tc.in)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var got *InvalidParametersError
			if !errors.As(err, &got) {
				t.Fatalf("got %v, want an *InvalidParametersError", err)
			}
			if !slices.Equal(got.Owned, tc.want.Owned) || !slices.Equal(got.InvalidNames, tc.want.InvalidNames) || !slices.Equal(got.InvalidValues, tc.want.InvalidValues) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestInvalidParametersErrorMessage(t *testing.T) {
	err := ValidateParameters(map[string]string{"port": "1", "listen_addresses": "*", "work_mem": "1\n"})
	want := "refused PostgreSQL parameters: parameters owned by the operator: listen_addresses, port; values with a newline or a NUL character: work_mem"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestOwnedParameters(t *testing.T) {
	got := OwnedParameters()
	if !slices.IsSorted(got) || !slices.Contains(got, "archive_*") || !slices.Contains(got, "port") {
		t.Errorf("got %v", got)
	}
	for _, name := range []string{"port", "ssl_ciphers", "recovery_min_apply_delay", "primary_slot_name"} {
		if !IsOwnedParameter(name) {
			t.Errorf("%s is not owned", name)
		}
	}
	for _, name := range []string{"shared_preload_libraries", "work_mem", "max_connections"} {
		if IsOwnedParameter(name) {
			t.Errorf("%s is owned", name)
		}
	}
}

func TestQuoteConfValue(t *testing.T) {
	tests := map[string]string{
		"":         "''",
		"on":       "'on'",
		"it's":     "'it''s'",
		`C:\path`:  `'C:\\path'`,
		`a\'b`:     `'a\\''b'`,
		"%m [%p] ": "'%m [%p] '",
	}
	for in, want := range tests {
		if got := quoteConfValue(in); got != want {
			t.Errorf("quoteConfValue(%q) = %s, want %s", in, got, want)
		}
		if back, err := unquoteConfValue(want); err != nil || back != in {
			t.Errorf("unquoteConfValue(%s) = %q, %v; want %q", want, back, err, in)
		}
	}
	for _, bad := range []string{"", "on", "'a'b'", `'a\b'`} {
		if _, err := unquoteConfValue(bad); err == nil {
			t.Errorf("unquoteConfValue(%s) succeeded", bad)
		}
	}
}

// TestRefusalReason keeps of what postgres -C says of a refused file what
// concerns the user's lines, without the scratch file's name.
func TestRefusalReason(t *testing.T) {
	said := `2026-12-06 03:49:15.052 GMT [17308] LOG:  skipping missing configuration file "/d/.data.parameters-1/postgresql.auto.conf"
2026-12-06 03:49:15.052 GMT [17308] LOG:  unrecognized configuration parameter "shared_bufers" in file "/d/.data.parameters-1/postgresql.conf" line 1
2026-12-06 03:49:15.052 GMT [17308] LOG:  invalid value for parameter "work_mem": "8XB"
2026-12-06 03:49:15.052 GMT [17308] HINT:  Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".
2026-12-06 03:49:15.052 GMT [17308] FATAL:  configuration file "/d/.data.parameters-1/postgresql.conf" contains errors
`
	want := `unrecognized configuration parameter "shared_bufers"; invalid value for parameter "work_mem": "8XB" (Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".)`
	if got := refusalReason(said); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
