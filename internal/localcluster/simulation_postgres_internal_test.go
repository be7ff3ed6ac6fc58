package localcluster

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestHostsFileNamesEveryPodAsClusterDNSWould(t *testing.T) {
	self := hostsEntry{addr: netip.MustParseAddr("10.201.0.2"), namespace: "ns", hostname: "db-1", subdomain: "db"}
	entries := []hostsEntry{
		{addr: netip.MustParseAddr("10.201.0.4"), namespace: "other", hostname: "pg-1", subdomain: "pg"},
		{addr: netip.MustParseAddr("10.201.0.3"), namespace: "ns", hostname: "db-2", subdomain: "db"},
		{addr: netip.MustParseAddr("10.201.0.5"), namespace: "ns", hostname: "lonely"},
		self,
	}
	got := string(hostsFile(self, entries))
	want := []string{
		"127.0.0.1\tlocalhost",
		"10.201.0.2\tdb-1.db.ns.svc.cluster.local db-1.db.ns.svc db-1.db.ns db-1.db db-1",
		"10.201.0.3\tdb-2.db.ns.svc.cluster.local db-2.db.ns.svc db-2.db.ns db-2.db",
		"10.201.0.4\tpg-1.pg.other.svc.cluster.local pg-1.pg.other.svc",
	}
	for _, line := range want {
		if !strings.Contains(got, line+"\n") {
			t.Errorf("hosts file lacks %q:\n%s", line, got)
		}
	}
	if strings.Contains(got, "lonely") {
		t.Errorf("a pod without subdomain has no DNS name, but:\n%s", got)
	}
	if again := string(hostsFile(self, []hostsEntry{entries[3], entries[2], entries[1], entries[0]})); again != got {
		t.Errorf("the content depends on the order of the pods:\n%s\n%s", got, again)
	}
}

func TestExpandEnvRefs(t *testing.T) {
	vars := newEnvList()
	vars.set("POD_NAME", "db-1")
	for in, want := range map[string]string{
		"plain":                  "plain",
		"$(POD_NAME).db":         "db-1.db",
		"$$(POD_NAME)":           "$(POD_NAME)",
		"$(UNKNOWN)-x":           "$(UNKNOWN)-x",
		"cost: $5 $(":            "cost: $5 $(",
		"$(POD_NAME)$(POD_NAME)": "db-1db-1",
	} {
		if got := expandEnvRefs(in, vars); got != want {
			t.Errorf("expandEnvRefs(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestServiceBackendsAreTheSimulatedPodsOfTheSlices(t *testing.T) {
	addrs := map[string]netip.Addr{"db-1": netip.MustParseAddr("10.201.0.2"), "db-2": netip.MustParseAddr("10.201.0.3")}
	podAddr := func(namespace, name string, _ types.UID) (netip.Addr, bool) {
		a, ok := addrs[name]
		return a, ok && namespace == "ns"
	}
	endpoint := func(pod string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{"10.244.0.9"}, // kwok's, never dialled
			Conditions: discoveryv1.EndpointConditions{Ready: ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: pod},
		}
	}
	slices := []discoveryv1.EndpointSlice{{
		Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("postgres"), Port: ptr.To[int32](5432)}, {Name: ptr.To("status"), Port: ptr.To[int32](8000)}},
		Endpoints: []discoveryv1.Endpoint{endpoint("db-1", nil), endpoint("db-2", ptr.To(false)), endpoint("not-simulated", ptr.To(true))},
	}}
	ready, present := backends(slices, "postgres", podAddr)
	if len(ready) != 1 || ready[0] != "10.201.0.2:5432" {
		t.Errorf("ready = %v, want db-1 at its namespace address", ready)
	}
	if len(present) != 2 || !present["10.201.0.2:5432"] || !present["10.201.0.3:5432"] {
		t.Errorf("present = %v, want db-1 and db-2", present)
	}
	if ready, _ := backends(slices, "other", podAddr); len(ready) != 0 {
		t.Errorf("a port the slices lack has backends %v", ready)
	}
}
