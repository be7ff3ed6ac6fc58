package localcluster

// SIMULATION: name resolution between the simulated PostgreSQL pods. See
// simulation_postgres.go.
//
// There is no cluster DNS: each pod's network namespace gets a hosts file,
// /etc/netns/NETNS/hosts, which ip netns exec bind-mounts over /etc/hosts.
// It names every simulated PostgreSQL pod that has a subdomain as CoreDNS
// would (HOSTNAME.SUBDOMAIN.NAMESPACE.svc.cluster.local), whether or not a
// headless Service of that name exists, and only the pods: Service names do
// not resolve in the namespaces.

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// clusterDomain is the local cluster's DNS domain, as kubelets default it.
const clusterDomain = "cluster.local"

// hostsEntry is what the hosts files say of one pod.
type hostsEntry struct {
	addr                           netip.Addr
	namespace, hostname, subdomain string
}

// hostsFile is the hosts file of self's namespace: localhost, then every
// entry with its fully qualified names; the names that a resolver's search
// path would complete are listed too for the pods of self's namespace, as
// hosts files know no search path.
func hostsFile(self hostsEntry, entries []hostsEntry) []byte {
	var b bytes.Buffer
	b.WriteString("# SIMULATION: written by the local cluster (internal/localcluster/simulation_postgres_hosts.go)\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b hostsEntry) int {
		return strings.Compare(a.namespace+"/"+a.hostname+"."+a.subdomain, b.namespace+"/"+b.hostname+"."+b.subdomain)
	})
	for _, e := range entries {
		isSelf := e == self
		var names []string
		if e.subdomain != "" {
			fqdn := fmt.Sprintf("%s.%s.%s.svc", e.hostname, e.subdomain, e.namespace)
			names = append(names, fqdn+"."+clusterDomain, fqdn)
			if e.namespace == self.namespace {
				names = append(names, fmt.Sprintf("%s.%s.%s", e.hostname, e.subdomain, e.namespace), e.hostname+"."+e.subdomain)
			}
		}
		if isSelf {
			names = append(names, e.hostname)
		}
		if len(names) > 0 {
			fmt.Fprintf(&b, "%s\t%s\n", e.addr, strings.Join(names, " "))
		}
	}
	return b.Bytes()
}

// writeHostsFile writes the hosts file of netns if its content changed. It
// truncates and writes the file in place: the namespace's processes see it
// through a bind mount of this very inode, which a rename would leave
// behind.
func writeHostsFile(netns string, content []byte) error {
	path := filepath.Join(pgsimNetnsConfigDir, netns, "hosts")
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("simulation: hosts file of %s: %w", netns, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("simulation: hosts file of %s: %w", netns, err)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return fmt.Errorf("simulation: hosts file of %s: %w", netns, err)
	}
	return f.Close()
}
