package main

import (
	"context"
	"encoding/json"
	"fmt"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/pgspec"
)

// postgresCommands prints, once for each PostgresCluster whose CLUSTER-rw
// Service has its loopback address (the simulation's stand-in for
// kube-proxy), the psql command that reaches its primary.
type postgresCommands struct {
	printed map[string]bool
}

func (p *postgresCommands) show(ctx context.Context, cluster *localcluster.Cluster) {
	out, err := cluster.Kubectl(ctx, "get", "services", "--all-namespaces", "-l", "example.com/postgrescluster", "-o", "json").Output()
	if err != nil {
		return
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name, Namespace string
				Labels          map[string]string
				Annotations     map[string]string
			}
		}
	}
	if json.Unmarshal(out, &list) != nil {
		return
	}
	if p.printed == nil {
		p.printed = map[string]bool{}
	}
	for _, svc := range list.Items {
		m := svc.Metadata
		address := m.Annotations[localcluster.SimulationAddressAnnotation]
		name := m.Labels[v1alpha1.PostgresClusterLabel]
		if address == "" || m.Name != pgspec.WriteService(name) || p.printed[m.Namespace+"/"+m.Name] {
			continue
		}
		p.printed[m.Namespace+"/"+m.Name] = true
		if text, err := psqlCommand(m.Namespace, name, m.Name, address); err == nil {
			fmt.Print(text)
		}
	}
}

// psqlCommand is what a user types to reach the cluster's primary through
// its Service, over TLS with the server verified (sslmode=verify-full),
// the CA and the password read from the application's Secret.
func psqlCommand(namespace, cluster, service, address string) (string, error) {
	caFile := cluster + "-ca.crt"
	conn, err := localcluster.PostgresClientConnString(address, "app", "app", caFile)
	if err != nil {
		return "", err
	}
	secret := pgspec.GeneratedAppSecret(cluster)
	return fmt.Sprintf("\nPostgresCluster %s/%s: its primary, through Service %s, from this machine, over TLS:\n"+
		"  kubectl get secret -n %s %s -o jsonpath='{.data.ca\\.crt}' | base64 -d > %s\n"+
		"  PGPASSWORD=$(kubectl get secret -n %s %s -o jsonpath='{.data.password}' | base64 -d) psql \"%s\"\n",
		namespace, cluster, service, namespace, secret, caFile, namespace, secret, conn), nil
}
