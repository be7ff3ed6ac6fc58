package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// LocalConnInfo is how the instance manager reaches its own instance: as
// the superuser over the Unix socket, which pg_hba.conf trusts.
func (i *Instance) LocalConnInfo(database string) ConnInfo {
	return ConnInfo{Host: i.SocketDir, Port: i.Port, User: SuperUser, DBName: database, ApplicationName: "instance-manager"}
}

// Connect connects to the instance as the superuser over its socket.
func (i *Instance) Connect(ctx context.Context, database string) (*pgx.Conn, error) {
	return Connect(ctx, i.LocalConnInfo(database))
}

func (i *Instance) ping(ctx context.Context) error {
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		return fmt.Errorf("query the instance: %w", err)
	}
	return nil
}

// quoteLiteral quotes a string as an SQL literal (standard_conforming_strings
// is on since PostgreSQL 9.1): for the statements that take no parameters,
// such as ALTER ROLE ... PASSWORD.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// quoteIdent quotes an identifier (a role or a database name).
func quoteIdent(s string) string {
	return pgx.Identifier{s}.Sanitize()
}
