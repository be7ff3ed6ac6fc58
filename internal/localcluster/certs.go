package localcluster

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// credentials are the files the control plane authenticates with.
type credentials struct {
	// servingCert holds the API server's certificate followed by the CA that
	// signed it, so it also serves as the CA bundle of clients.
	servingCert, servingKey string
	// serviceAccountKey signs and verifies ServiceAccount tokens.
	serviceAccountKey string
	// tokenFile maps the admin token to a user in system:masters.
	tokenFile  string
	adminToken string
}

// writeCredentials creates fresh keys and certificates in dir.
func writeCredentials(dir string) (credentials, error) {
	creds := credentials{
		servingCert:       filepath.Join(dir, "apiserver.crt"),
		servingKey:        filepath.Join(dir, "apiserver.key"),
		serviceAccountKey: filepath.Join(dir, "service-account.key"),
		tokenFile:         filepath.Join(dir, "tokens.csv"),
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1",
		[]net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost", "kubernetes.default.svc"})
	if err != nil {
		return creds, fmt.Errorf("generate serving certificate: %w", err)
	}
	saKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return creds, fmt.Errorf("generate service account key: %w", err)
	}
	creds.adminToken, err = randomToken()
	if err != nil {
		return creds, err
	}
	files := map[string][]byte{
		creds.servingCert:       cert,
		creds.servingKey:        key,
		creds.serviceAccountKey: saKey,
		creds.tokenFile:         fmt.Appendf(nil, "%s,admin,admin,system:masters\n", creds.adminToken),
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return creds, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return creds, nil
}

// writeKubeconfig writes a kubeconfig for server that authenticates with
// token.
func writeKubeconfig(path, server, caFile, token, user string) error {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return fmt.Errorf("read CA: %w", err)
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user, Namespace: "default"}
	config.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
