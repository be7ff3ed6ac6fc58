package postgres

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// SetPassword sets a role's password as a SCRAM-SHA-256 verifier, so that
// the password itself never reaches the server. Existing sessions keep
// going; new logins need the new password.
func (i *Instance) SetPassword(ctx context.Context, role, password string) error {
	return i.setPassword(ctx, role, password, false)
}

// EnsureReplicationRole makes role, with the replication right, login and
// password, when it is missing (a cluster made before the role was one the
// operator keeps), else sets its password as SetPassword does.
func (i *Instance) EnsureReplicationRole(ctx context.Context, role, password string) error {
	return i.setPassword(ctx, role, password, true)
}

func (i *Instance) setPassword(ctx context.Context, role, password string, create bool) error {
	if err := i.validate(); err != nil {
		return err
	}
	if role == "" || password == "" {
		return errors.New("set password: empty role or password")
	}
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	var current *string
	rows, err := conn.Query(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = $1", role)
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	for rows.Next() {
		exists = true
		if err := rows.Scan(&current); err != nil {
			rows.Close()
			return fmt.Errorf("set the password of %s: %w", role, err)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	if !exists && !create {
		return fmt.Errorf("set the password of %s: no such role", role)
	}
	if current != nil && verifies(*current, password) {
		// Already set: no write, which a primary without its synchronous
		// standbys could not commit.
		return nil
	}
	verifier, err := SCRAMVerifier(password)
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	// The change reaches the standbys as any other; it does not wait for
	// a synchronous one, which may be the very reason for a new password.
	if _, err := conn.Exec(ctx, "SET synchronous_commit TO local"); err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	statement, done := "ALTER ROLE %s WITH PASSWORD %s", "Set a role's password"
	if !exists {
		statement, done = "CREATE ROLE %s WITH REPLICATION LOGIN PASSWORD %s", "Made a replication role"
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf(statement, quoteIdent(role), quoteLiteral(verifier))); err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	i.Log.Info(done, "role", role)
	return nil
}

// verifies tells whether a stored SCRAM-SHA-256 verifier is that of
// password: the verifier computed with its salt and iterations is the same.
func verifies(stored, password string) bool {
	rest, ok := strings.CutPrefix(stored, "SCRAM-SHA-256$")
	if !ok {
		return false
	}
	iterSalt, _, ok := strings.Cut(rest, "$")
	if !ok {
		return false
	}
	iterText, saltText, ok := strings.Cut(iterSalt, ":")
	if !ok {
		return false
	}
	iterations, err := strconv.Atoi(iterText)
	if err != nil || iterations < 1 {
		return false
	}
	salt, err := base64.StdEncoding.DecodeString(saltText)
	if err != nil {
		return false
	}
	computed, err := scramVerifier(password, salt, iterations)
	return err == nil && subtle.ConstantTimeCompare([]byte(computed), []byte(stored)) == 1
}
