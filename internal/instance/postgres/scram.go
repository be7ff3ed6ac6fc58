package postgres

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xdg-go/scram"
	"github.com/xdg-go/stringprep"
)

// SCRAM-SHA-256 verifiers as PostgreSQL stores them in pg_authid
// (RFC 5802, RFC 7677), with PostgreSQL's defaults.
const (
	scramIterations = 4096
	scramSaltLen    = 16
)

// SCRAMVerifier computes the SCRAM-SHA-256 verifier of a password, with a
// random salt, in the form PostgreSQL stores and accepts in place of a
// password:
//
//	SCRAM-SHA-256$4096:<salt>$<StoredKey>:<ServerKey>
//
// Setting a role's password to its verifier lets PostgreSQL check logins
// without the password ever reaching the server, its logs included.
func SCRAMVerifier(password string) (string, error) {
	salt := make([]byte, scramSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("generate a SCRAM salt: %w", err)
	}
	return scramVerifier(password, salt, scramIterations)
}

// scramVerifier is SCRAMVerifier with a given salt and iteration count.
// The keys are derived by github.com/xdg-go/scram from the password
// prepared by saslPrep.
func scramVerifier(password string, salt []byte, iterations int) (string, error) {
	// Unprepped: saslPrep has prepared it, PostgreSQL's way.
	client, err := scram.SHA256.NewClientUnprepped("", saslPrep(password), "")
	if err != nil {
		return "", fmt.Errorf("derive the SCRAM keys: %w", err)
	}
	creds, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iterations})
	if err != nil {
		return "", fmt.Errorf("derive the SCRAM keys: %w", err)
	}
	enc := base64.StdEncoding
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations,
		enc.EncodeToString(salt), enc.EncodeToString(creds.StoredKey), enc.EncodeToString(creds.ServerKey)), nil
}

// saslPrep prepares a password with SASLprep (RFC 4013, by
// github.com/xdg-go/stringprep) as PostgreSQL's pg_saslprep
// (src/common/saslprep.c) and libpq do, so that a verifier computed here
// matches what a client derives from the same password. PostgreSQL departs
// from a strict SASLprep in what it does when preparation fails: a password
// that is not UTF-8, that SASLprep refuses (a prohibited or unassigned
// character, a bad mix of directions) or that it maps to nothing is used as
// it is, never refused. And it maps U+200B ZERO WIDTH SPACE, which RFC 3454
// lists both as a non-ASCII space (C.1.2) and as mapped to nothing (B.1), to
// a space, where the library drops it.
func saslPrep(password string) string {
	if !utf8.ValidString(password) {
		return password
	}
	prepared, err := stringprep.SASLprep.Prepare(strings.ReplaceAll(password, "\u200b", " "))
	if err != nil || prepared == "" {
		return password
	}
	return prepared
}
