package postgres

import "path/filepath"

// Names of the TLS files in the socket directory: memory-backed, 0700 and
// the instance's user's, so the key never reaches the data directory (which
// clones and backups copy).
const (
	tlsCertFile = "tls.crt"
	tlsKeyFile  = "tls.key"
	tlsCAFile   = "ca.crt"
)

// TLSFiles are where WriteTLS writes the instance's certificate, key and
// CA certificate.
func (i *Instance) TLSFiles() TLS {
	return TLS{
		CertFile: filepath.Join(i.SocketDir, tlsCertFile),
		KeyFile:  filepath.Join(i.SocketDir, tlsKeyFile),
		CAFile:   filepath.Join(i.SocketDir, tlsCAFile),
	}
}

// WriteTLS writes the server's certificate, its key and the cluster's CA
// certificate (PEM) into the socket directory, each 0600 and owned by the
// instance's user (PostgreSQL refuses a key others can read), and returns
// their paths. A running PostgreSQL reads them again on a reload.
func (i *Instance) WriteTLS(cert, key, ca []byte) (TLS, error) {
	if err := i.mkdirOwned(i.SocketDir); err != nil {
		return TLS{}, err
	}
	files := i.TLSFiles()
	for _, f := range []struct {
		path string
		data []byte
	}{{files.CAFile, ca}, {files.KeyFile, key}, {files.CertFile, cert}} {
		if err := i.writeFile(f.path, f.data, 0o600); err != nil {
			return TLS{}, err
		}
	}
	return files, nil
}
