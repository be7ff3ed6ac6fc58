package postgres

import (
	"encoding/base64"
	"strings"
	"testing"
)

// The vectors were computed by PostgreSQL 15 itself (CREATE ROLE ...
// PASSWORD '...', then pg_authid.rolpassword); TestSCRAMVerifierMatchesServer
// compares with a live server.
func TestSCRAMVerifierKnownVectors(t *testing.T) {
	tests := map[string]struct {
		password string
		server   string
	}{
		"ASCII": {
			password: "pencil",
			server:   "SCRAM-SHA-256$4096:KM7p0Vj2krfVhrNZbTaGow==$xF0+gzBUou/dlZ9MGxdINqWuNWKKnTRrTj7cUKhLJKw=:KYUqQiQaGWeul03DpCEnF8SLdXu1L2ilIkYiu1hNsxM=",
		},
		"SASLprep: ligature, non-ASCII space, soft hyphen": {
			password: "\ufb01 p\u00e4ss\u00a0w\u00adord",
			server:   "SCRAM-SHA-256$4096:uoDJKhRm8qX/pTKyKAuj0g==$XJBrtXQHvbykmBHXb1f9j+RfU4VDeTsoZHRee3RzPYs=:FcbEPrklWf/uXbmSjuFSY91Cybxm70dV7j6YX5pPbSw=",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			saltB64 := strings.Split(strings.Split(tc.server, ":")[1], "$")[0]
			salt, err := base64.StdEncoding.DecodeString(saltB64)
			if err != nil {
				t.Fatal(err)
			}
			got, err := scramVerifier(tc.password, salt, 4096)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.server {
				t.Errorf("got %s\nwant %s", got, tc.server)
			}
		})
	}
}

func TestSCRAMVerifierForm(t *testing.T) {
	a, err := SCRAMVerifier("secret")
	if err != nil {
		t.Fatal(err)
	}
	b, err := SCRAMVerifier("secret")
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Error("two verifiers of one password are equal: the salt is not random")
	}
	if !strings.HasPrefix(a, "SCRAM-SHA-256$4096:") || strings.Contains(a, "secret") {
		t.Errorf("unexpected verifier %s", a)
	}
	saltB64 := strings.Split(strings.Split(a, ":")[1], "$")[0]
	if salt, err := base64.StdEncoding.DecodeString(saltB64); err != nil || len(salt) != 16 {
		t.Errorf("salt %q: %d bytes, %v", saltB64, len(salt), err)
	}
}

func TestSASLPrep(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"ASCII unchanged":                 {"pencil", "pencil"},
		"ASCII control unchanged":         {"a\tb", "a\tb"},
		"non-ASCII space":                 {"a\u3000b", "a b"},
		"mapped to nothing":               {"a\u200db\ufe0f", "ab"},
		"NFKC":                            {"\u2168", "IX"},
		"prohibited: raw":                 {"\ue000é", "\ue000é"},
		"invalid UTF-8: raw":              {"a\xffé", "a\xffé"},
		"only mapped to nothing: raw":     {"\u00ad", "\u00ad"},
		"right-to-left alone":             {"\u05d0\u05d1", "\u05d0\u05d1"},
		"right-to-left mixed with L: raw": {"\u05d0a\u05d1\u00a0", "\u05d0a\u05d1\u00a0"},
		"zero width space: a space":       {"a\u200bb", "a b"},
		"unassigned in Unicode 3.2: raw":  {"\U0001F600\u00a0", "\U0001F600\u00a0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := saslPrep(tc.in); got != tc.want {
				t.Errorf("saslPrep(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// A stored verifier is recognized as that of its password, and of no other:
// SetPassword writes nothing when the password is already set.
func TestStoredVerifierVerifiesItsPassword(t *testing.T) {
	stored, err := SCRAMVerifier("correct horse")
	if err != nil {
		t.Fatal(err)
	}
	for password, want := range map[string]bool{"correct horse": true, "correct horse ": false, "": false} {
		if got := verifies(stored, password); got != want {
			t.Errorf("verifies(%q) = %v, want %v", password, got, want)
		}
	}
	if verifies("md5abc", "correct horse") {
		t.Error("an md5 hash verified a password")
	}
}
