package postgres

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
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
// The password is prepared with SASLprep first, as PostgreSQL and libpq do.
func scramVerifier(password string, salt []byte, iterations int) (string, error) {
	salted, err := pbkdf2.Key(sha256.New, saslPrep(password), salt, iterations, sha256.Size)
	if err != nil {
		return "", fmt.Errorf("derive the SCRAM salted password: %w", err)
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	enc := base64.StdEncoding
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", iterations,
		enc.EncodeToString(salt), enc.EncodeToString(storedKey[:]), enc.EncodeToString(serverKey)), nil
}

func hmacSHA256(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}
