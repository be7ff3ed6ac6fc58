package postgres

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/onsi/gomega/format"
)

func TestConnInfoString(t *testing.T) {
	tests := map[string]struct {
		in   ConnInfo
		want string
	}{
		"standby of a primary": {
			in:   ConnInfo{Host: "10.0.0.1", Port: 5432, User: ReplicationUser, PassFile: "/etc/pg/pgpass", ApplicationName: "pg-1"},
			want: `host='10.0.0.1' port='5432' user='streaming_replica' passfile='/etc/pg/pgpass' application_name='pg-1' sslmode='prefer'`,
		},
		"password left out": {
			in:   ConnInfo{Host: "h", User: "u", Password: "secret", DBName: "d"},
			want: `host='h' user='u' dbname='d' sslmode='prefer'`,
		},
		"quotes, backslashes and spaces": {
			in:   ConnInfo{Host: "/run/pg sock", User: `o'brien\x`, SSLMode: "require"},
			want: `host='/run/pg sock' user='o\'brien\\x' sslmode='require'`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.in.String()
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			// libpq's syntax, as pgx parses it, gives the values back.
			cfg, err := pgx.ParseConfig(got)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.in.Host || cfg.User != tc.in.User {
				t.Errorf("parsed back host %q user %q", cfg.Host, cfg.User)
			}
			if tc.in.ApplicationName != "" && cfg.RuntimeParams["application_name"] != tc.in.ApplicationName {
				t.Errorf("parsed back application_name %q", cfg.RuntimeParams["application_name"])
			}
		})
	}
}

func TestConnInfoValidate(t *testing.T) {
	tests := map[string]ConnInfo{
		"no host":           {User: "u"},
		"newline in user":   {Host: "h", User: "u\nhost=evil"},
		"port out of range": {Host: "h", Port: 70000},
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			if err := c.validate(); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestRenderPassFile(t *testing.T) {
	got, err := RenderPassFile(
		ConnInfo{Host: "10.0.0.1", Port: 5432, User: ReplicationUser, Password: `pa:ss\word`},
		ConnInfo{Host: "10.0.0.2", User: ReplicationUser, Password: "x"},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := "10.0.0.1:5432:*:streaming_replica:pa\\:ss\\\\word\n10.0.0.2:*:*:streaming_replica:x\n"
	if got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if _, err := RenderPassFile(ConnInfo{Host: "h", User: "u"}); err == nil {
		t.Error("an entry without a password was accepted")
	}
	if _, err := RenderPassFile(ConnInfo{Host: "h", User: "u", Password: "a\nb"}); err == nil {
		t.Error("a password with a newline was accepted")
	}
}

// A failed connection's error never holds the password, even printed field
// by field as test matchers print errors: pgx's *pgconn.ConnectError keeps
// the whole configuration, password included.
func TestConnectErrorHoldsNoPassword(t *testing.T) {
	const password = "s3cret-never-printed"
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := listener.Addr().(*net.TCPAddr).Port
	listener.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Connect(ctx, ConnInfo{Host: "127.0.0.1", Port: port, User: "app", Password: password, DBName: "app"})
	if err == nil {
		t.Fatal("connected to a closed port")
	}
	if printed := format.Object(err, 0); strings.Contains(printed, password) {
		t.Errorf("the error, printed, shows the password:\n%s", printed)
	}
	if !strings.Contains(err.Error(), "connect to") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("the error does not say what failed: %v", err)
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("the error does not unwrap to the network's: %#v", err)
	}
}
