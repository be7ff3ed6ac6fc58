package postgres

import "io"

// SCRAMVerifierWithSalt exposes the verifier with a given salt to the
// external tests, which compare it with the server's own.
func SCRAMVerifierWithSalt(password string, salt []byte, iterations int) (string, error) {
	return scramVerifier(password, salt, iterations)
}

// Running exposes whether a process still runs to the external tests.
var Running = running

// ReadTarBackupLabel exposes what a base backup's tar stream says of the
// backup to the external tests.
func ReadTarBackupLabel(r io.Reader) (BackupLabel, error) { return scanBackupFiles(r).label() }
