package postgres

import (
	"context"
	"errors"
	"fmt"
)

// SetPassword sets a role's password as a SCRAM-SHA-256 verifier, so that
// the password itself never reaches the server. Existing sessions keep
// going; new logins need the new password.
func (i *Instance) SetPassword(ctx context.Context, role, password string) error {
	if err := i.validate(); err != nil {
		return err
	}
	if role == "" || password == "" {
		return errors.New("set password: empty role or password")
	}
	verifier, err := SCRAMVerifier(password)
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER ROLE %s WITH PASSWORD %s", quoteIdent(role), quoteLiteral(verifier))); err != nil {
		return fmt.Errorf("set the password of %s: %w", role, err)
	}
	i.Log.Info("Set a role's password", "role", role)
	return nil
}
