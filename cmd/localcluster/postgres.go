package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
		host, port, _ := strings.Cut(address, ":")
		fmt.Printf("\nPostgresCluster %s/%s: its primary, through Service %s, from this machine:\n"+
			"  PGPASSWORD=$(kubectl get secret -n %s %s -o jsonpath='{.data.password}' | base64 -d) psql -h %s -p %s -U app app\n",
			m.Namespace, name, m.Name, m.Namespace, pgspec.GeneratedAppSecret(name), host, port)
	}
}
