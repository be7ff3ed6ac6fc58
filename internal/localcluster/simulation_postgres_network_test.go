package localcluster

import (
	"os"
	"strings"
	"testing"
)

// The bridge keeps the MAC address it was given while pods' veths come and
// go: a bridge left to take its ports' lowest would change it, and every
// namespace's traffic to the host's address (the API server's proxy, the
// Services) would stall until its ARP entry was resolved again.
func TestBridgeKeepsItsAddressAsPodsComeAndGo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes a bridge and network namespaces")
	}
	n, err := claimNetwork(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.close)
	want := bridgeMAC(n.slot)
	address := func() string {
		t.Helper()
		data, err := os.ReadFile("/sys/class/net/" + n.bridge + "/address")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	if got := address(); got != want {
		t.Fatalf("new bridge: address %s, want %s", got, want)
	}
	var namespaces []string
	for octet := pgsimFirstPod; octet < pgsimFirstPod+3; octet++ {
		netns, _, err := n.addPod(octet)
		if err != nil {
			t.Fatal(err)
		}
		namespaces = append(namespaces, netns)
		if got := address(); got != want {
			t.Fatalf("after pod %d came: address %s, want %s", octet, got, want)
		}
	}
	for _, netns := range namespaces {
		removeNetns(netns)
		if got := address(); got != want {
			t.Fatalf("after %s went: address %s, want %s", netns, got, want)
		}
	}
}
