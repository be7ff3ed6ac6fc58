package postgres

import (
	"fmt"
	"strconv"
	"strings"
)

// RenderPassFile renders a libpq password file with one line per
// connection that has a password, for any database (so that one line serves
// both the replication connection of a standby and the ordinary one of
// pg_rewind). Colons and backslashes are escaped as libpq expects.
func RenderPassFile(conns ...ConnInfo) (string, error) {
	var b strings.Builder
	for _, c := range conns {
		if err := c.validate(); err != nil {
			return "", err
		}
		if c.Password == "" {
			return "", fmt.Errorf("password file entry for %s has no password", c)
		}
		port := "*"
		if c.Port != 0 {
			port = strconv.Itoa(c.Port)
		}
		user := c.User
		if user == "" {
			user = "*"
		}
		fmt.Fprintf(&b, "%s:%s:*:%s:%s\n", escapePassField(c.Host), port, escapePassField(user), escapePassField(c.Password))
	}
	return b.String(), nil
}

func escapePassField(s string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`).Replace(s)
}

// WritePassFile writes a libpq password file (see RenderPassFile) at path,
// mode 0600 and owned by the instance's user: libpq ignores a password file
// that others can read, and postgres's WAL receiver reads it as that user.
func (i *Instance) WritePassFile(path string, conns ...ConnInfo) error {
	content, err := RenderPassFile(conns...)
	if err != nil {
		return err
	}
	if err := i.writeFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write password file: %w", err)
	}
	return nil
}
