package postgrescluster

import (
	"crypto/rand"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// Keys of the credentials Secrets. username and password are those of the
// kubernetes.io/basic-auth type; the application's Secret adds what a
// client needs to connect.
const (
	UsernameKey = corev1.BasicAuthUsernameKey
	PasswordKey = corev1.BasicAuthPasswordKey
	HostKey     = "host"
	PortKey     = "port"
	DBNameKey   = "dbname"
	URIKey      = "uri"
	JDBCURIKey  = "jdbc-uri"
	// CACertKey is the cluster's CA certificate, which a client verifies
	// the server with (sslrootcert): a client mounts the Secret and
	// points sslrootcert at the file.
	CACertKey = pgspec.CACertKey
)

// passwordAlphabet is what generated passwords are made of: letters and
// digits, which need no quoting in a URI, a shell or a JDBC string.
const passwordAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// newPassword returns 32 characters of passwordAlphabet from the system's
// random source: about 190 bits.
func newPassword() (string, error) {
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("generate a password: %w", err)
	}
	for i, b := range buf {
		// 62 letters: the bias of b % 62 over 256 values is below 1 %, and
		// the password stays far beyond guessing.
		buf[i] = passwordAlphabet[int(b)%len(passwordAlphabet)]
	}
	return string(buf), nil
}

// writeHost is the in-cluster DNS name of CLUSTER-rw, which the
// application's Secret points to.
func writeHost(pg *v1alpha1.PostgresCluster, clusterDomain string) string {
	return pgspec.ServiceHost(pgspec.WriteService(pg.Name), pg.Namespace, clusterDomain)
}

// DesiredAppSecret is the generated Secret of the application's owner,
// with password, and what a client needs to connect through CLUSTER-rw
// with TLS: the CA's certificate caCert, and URIs that verify the server
// (sslmode=verify-full).
func DesiredAppSecret(pg *v1alpha1.PostgresCluster, password, clusterDomain string, caCert []byte) *corev1.Secret {
	db := initDB(pg)
	keys := connectionKeys(db.Owner, password, writeHost(pg, clusterDomain), db.Database)
	keys[CACertKey] = string(caCert)
	return credentialsSecret(pg, pgspec.GeneratedAppSecret(pg.Name), keys)
}

// connectionKeys are the keys of an application Secret. Its URIs ask for
// TLS with the server's certificate checked against the CA and the host
// name (sslmode=verify-full): the client names the CA's file with
// sslrootcert (libpq: the PGSSLROOTCERT variable or ?sslrootcert=; JDBC:
// its sslrootcert parameter), from the Secret's ca.crt.
func connectionKeys(user, password, host, database string) map[string]string {
	port := fmt.Sprint(pgspec.Port)
	uri := url.URL{Scheme: "postgresql", User: url.UserPassword(user, password), Host: host + ":" + port, Path: "/" + database,
		RawQuery: url.Values{"sslmode": {"verify-full"}}.Encode()}
	jdbc := url.URL{Scheme: "jdbc:postgresql", Host: host + ":" + port, Path: "/" + database,
		RawQuery: url.Values{"user": {user}, "password": {password}, "sslmode": {"verify-full"}}.Encode()}
	return map[string]string{
		UsernameKey: user, PasswordKey: password, HostKey: host, PortKey: port, DBNameKey: database,
		URIKey: uri.String(), JDBCURIKey: jdbc.String(),
	}
}

// DesiredGeneratedSecrets are the Secrets the operator generates for pg,
// each with password: the superuser's, the replication and backup roles',
// and the application's unless bootstrap.initdb names the user's own.
func DesiredGeneratedSecrets(pg *v1alpha1.PostgresCluster, password, clusterDomain string, caCert []byte) []*corev1.Secret {
	out := []*corev1.Secret{desiredSuperuserSecret(pg, password), desiredReplicationSecret(pg, password), desiredBackupSecret(pg, password)}
	if pgspec.AppSecret(pg) == pgspec.GeneratedAppSecret(pg.Name) {
		out = append(out, DesiredAppSecret(pg, password, clusterDomain, caCert))
	}
	return out
}

// desiredSuperuserSecret is the superuser's Secret.
func desiredSuperuserSecret(pg *v1alpha1.PostgresCluster, password string) *corev1.Secret {
	return credentialsSecret(pg, pgspec.SuperuserSecret(pg.Name), map[string]string{UsernameKey: postgres.SuperUser, PasswordKey: password})
}

// desiredReplicationSecret is the replication role's Secret, which only the
// instance managers read.
func desiredReplicationSecret(pg *v1alpha1.PostgresCluster, password string) *corev1.Secret {
	return credentialsSecret(pg, pgspec.ReplicationSecret(pg.Name), map[string]string{UsernameKey: postgres.ReplicationUser, PasswordKey: password})
}

// desiredBackupSecret is the backup role's Secret, which the base backup
// Jobs of BackupJobs read.
func desiredBackupSecret(pg *v1alpha1.PostgresCluster, password string) *corev1.Secret {
	return credentialsSecret(pg, pgspec.BackupSecret(pg.Name), map[string]string{UsernameKey: postgres.BackupUser, PasswordKey: password})
}

func credentialsSecret(pg *v1alpha1.PostgresCluster, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pg.Namespace, Labels: clusterLabels(pg),
			OwnerReferences: []metav1.OwnerReference{controllerReference(pg)},
		},
		Type:       corev1.SecretTypeBasicAuth,
		StringData: data,
	}
}

// controllerReference makes pg the controller of an object.
func controllerReference(pg *v1alpha1.PostgresCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(pg, v1alpha1.GroupVersion.WithKind(kind))
}
