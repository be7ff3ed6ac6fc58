package instance

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// secretReader reads the cluster's credentials from the API server. The
// Role lets the instance managers read exactly these Secrets.
type secretReader struct {
	client    client.Client
	namespace string
}

// credential is a role's password, and the version of the Secret it came
// from.
type credential struct {
	user, password, version string
}

func (r secretReader) read(ctx context.Context, name string) (credential, error) {
	s := &corev1.Secret{}
	readCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.client.Get(readCtx, types.NamespacedName{Namespace: r.namespace, Name: name}, s); err != nil {
		return credential{}, fmt.Errorf("read Secret %s: %w", name, err)
	}
	password := string(s.Data[corev1.BasicAuthPasswordKey])
	if password == "" {
		return credential{}, fmt.Errorf("Secret %s has no %s", name, corev1.BasicAuthPasswordKey)
	}
	return credential{user: string(s.Data[corev1.BasicAuthUsernameKey]), password: password, version: s.ResourceVersion}, nil
}

// appSecretOf is the application owner's Secret: the one the operator
// reports it made, else the one the spec names.
func appSecretOf(pg *v1alpha1.PostgresCluster) string {
	if pg.Status.Credentials.AppSecret != "" {
		return pg.Status.Credentials.AppSecret
	}
	return pgspec.AppSecret(pg)
}

// owner is the application's role and database of the cluster.
func owner(pg *v1alpha1.PostgresCluster) (role, database string) {
	return pg.Spec.Bootstrap.ApplicationOwner()
}

// appRoleKey is the key of the application's role in Manager.applied.
const appRoleKey = "app"

// syncPasswords sets in the database, on a running primary, the passwords
// of Secrets that changed since they were last set: a person changes a
// password by changing its Secret. Each applied version is remembered, and
// the application's is reported.
func (m *Manager) syncPasswords(ctx context.Context, pg *v1alpha1.PostgresCluster, s instanceState) {
	if !s.ready || s.state.InRecovery || !m.lease.held(m.clock.Now()) {
		return
	}
	ownerRole, _ := owner(pg)
	for key, target := range map[string]struct {
		secret, role string
		// replication: a replication role that is made when missing (the
		// backup role of a cluster made before there was one).
		replication bool
	}{
		appRoleKey:               {secret: appSecretOf(pg), role: ownerRole},
		postgres.SuperUser:       {secret: pgspec.SuperuserSecret(pg.Name), role: postgres.SuperUser},
		postgres.ReplicationUser: {secret: pgspec.ReplicationSecret(pg.Name), role: postgres.ReplicationUser},
		postgres.BackupUser:      {secret: pgspec.BackupSecret(pg.Name), role: postgres.BackupUser, replication: true},
	} {
		cred, err := m.secrets.read(ctx, target.secret)
		if err != nil {
			m.log.V(1).Info("Password not checked", "secret", target.secret, "error", err.Error())
			continue
		}
		m.markAPI()
		if m.applied[key] == cred.version {
			continue
		}
		set := m.pg.SetPassword
		if target.replication {
			set = m.pg.EnsureReplicationRole
		}
		if err := set(ctx, target.role, cred.password); err != nil {
			m.log.Error(err, "Password not set", "role", target.role)
			continue
		}
		if m.applied[key] != "" {
			m.log.Info("Password set from its Secret", "role", target.role, "secret", target.secret)
		}
		m.applied[key] = cred.version
	}
}

// passFile is where the standby's password for replication is kept,
// outside the data directory (which clones and rewinds copy).
func (m *Manager) passFile() string { return filepath.Join(m.opts.SocketDir, ".pgpass") }

// replicationSource is how this instance reaches instance for replication,
// with the password written to the passfile.
func (m *Manager) replicationSource(ctx context.Context, pg *v1alpha1.PostgresCluster, instance string) (postgres.ConnInfo, error) {
	cred, err := m.secrets.read(ctx, pgspec.ReplicationSecret(pg.Name))
	if err != nil {
		return postgres.ConnInfo{}, err
	}
	m.markAPI()
	host, port := m.addressOf(instance)
	source := postgres.ConnInfo{
		Host: host, Port: port, User: postgres.ReplicationUser, DBName: "postgres",
		Password: cred.password, PassFile: m.passFile(), ApplicationName: m.opts.PodName,
	}
	m.replicationTLS(&source)
	if err := m.pg.WritePassFile(source.PassFile, source); err != nil {
		return postgres.ConnInfo{}, err
	}
	return source, nil
}
