package localcluster

// SIMULATION: the network of the simulated PostgreSQL pods. See
// simulation_postgres.go.
//
// Each cluster that runs the PostgreSQL simulation claims a slot N (0–255)
// by holding an flock on /run/pgsim/N.lock for as long as it runs. The slot
// names everything the cluster makes, so that two clusters on one machine
// never collide and a later run can tell what a crashed one left behind:
//
//	pgsimN            the bridge, with the host's address 10.201.N.1/24
//	pgsimN-K          a pod's network namespace and the host end of its veth;
//	                  the other end is eth0 in the namespace, address 10.201.N.K
//	/etc/netns/pgsimN-K/  the namespace's hosts file (simulation_postgres_hosts.go)
//	/run/pgsim/N/     the pods' socket folders
//
// Things of this scheme whose slot's lock nobody holds belong to no running
// cluster: they are removed, their processes killed, before a slot is
// claimed.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// pgsimName prefixes the bridges, veths and network namespaces.
	pgsimName = "pgsim"
	// pgsimRunDir holds the slots' locks and socket folders.
	pgsimRunDir = "/run/pgsim"
	// pgsimNetnsConfigDir is where ip netns exec finds the files it
	// bind-mounts over /etc in a namespace.
	pgsimNetnsConfigDir = "/etc/netns"
	// pgsimSlots is the number of slots: 10.201.0.0/24 to 10.201.255.0/24.
	// The range is far from kwok's pod addresses (10.244.0.0/16) and the
	// Service range (10.96.0.0/16), which belong to no host.
	pgsimSlots = 256
	// pgsimFirstPod and pgsimLastPod bound the last octet of pod addresses;
	// .1 is the host's.
	pgsimFirstPod, pgsimLastPod = 2, 254
)

var (
	pgsimBridgePattern = regexp.MustCompile(`^pgsim(\d{1,3})$`)
	pgsimPodPattern    = regexp.MustCompile(`^pgsim(\d{1,3})-(\d{1,3})$`)
)

// simNetwork is the bridge of one cluster's slot.
type simNetwork struct {
	slot   int
	lock   *os.File
	bridge string
	prefix netip.Prefix
	host   netip.Addr
}

// claimNetwork removes what crashed runs left behind, then claims the first
// free slot whose subnet no address or route of the host overlaps, and
// makes its bridge.
func claimNetwork(logf func(string, ...any)) (*simNetwork, error) {
	if err := os.MkdirAll(pgsimRunDir, 0o755); err != nil {
		return nil, fmt.Errorf("simulation: %w", err)
	}
	cleanStaleNetworks(logf)
	for slot := range pgsimSlots {
		lock, ok := lockSlot(slot)
		if !ok {
			continue
		}
		// Held now: whatever still carries this slot's name is stale.
		removeSlot(slot, logf)
		prefix := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 201, byte(slot), 0}), 24)
		if taken, err := hostOverlaps(prefix); err != nil || taken {
			lock.Close()
			if err != nil {
				return nil, err
			}
			continue
		}
		n := &simNetwork{slot: slot, lock: lock, bridge: fmt.Sprintf("%s%d", pgsimName, slot), prefix: prefix, host: podAddr(prefix, 1)}
		if err := n.makeBridge(); err != nil {
			n.close()
			return nil, err
		}
		return n, nil
	}
	return nil, errors.New("simulation: no free slot for a PostgreSQL network (10.201.0.0/16 is taken)")
}

// makeBridge makes the slot's bridge with a MAC address of its own. A
// bridge without one takes the lowest of its ports' and changes it as pods'
// veths come and go: every namespace's ARP entry for the host's address
// (the API server's proxy, the Services) then points at a MAC that no
// longer answers, and its traffic stalls for seconds until the entry is
// resolved again.
func (n *simNetwork) makeBridge() error {
	hostPrefix := netip.PrefixFrom(n.host, n.prefix.Bits()).String()
	return runIP(
		[]string{"link", "add", n.bridge, "type", "bridge"},
		[]string{"link", "set", n.bridge, "address", bridgeMAC(n.slot)},
		[]string{"addr", "add", hostPrefix, "dev", n.bridge},
		[]string{"link", "set", n.bridge, "up"},
	)
}

// bridgeMAC is the bridge's MAC address: locally administered, unicast,
// one per slot.
func bridgeMAC(slot int) string {
	return fmt.Sprintf("02:70:67:73:69:%02x", slot)
}

// podNames are the namespace and host veth name of a pod's octet (the
// same name), and its address.
func (n *simNetwork) podNames(octet int) (string, netip.Addr) {
	return fmt.Sprintf("%s%d-%d", pgsimName, n.slot, octet), podAddr(n.prefix, octet)
}

// addPod makes the network namespace of octet: a veth pair into the
// bridge, eth0 with its address, lo up. No default route: the namespace
// reaches the bridge's subnet and nothing else.
func (n *simNetwork) addPod(octet int) (netns string, addr netip.Addr, err error) {
	netns, addr = n.podNames(octet)
	err = runIP(
		[]string{"netns", "add", netns},
		[]string{"link", "add", netns, "type", "veth", "peer", "name", "eth0", "netns", netns},
		[]string{"link", "set", netns, "master", n.bridge},
		[]string{"link", "set", netns, "up"},
		[]string{"-n", netns, "addr", "add", netip.PrefixFrom(addr, n.prefix.Bits()).String(), "dev", "eth0"},
		[]string{"-n", netns, "link", "set", "eth0", "up"},
		[]string{"-n", netns, "link", "set", "lo", "up"},
	)
	if err != nil {
		removeNetns(netns)
		return "", netip.Addr{}, err
	}
	return netns, addr, nil
}

// setLink sets the host end of octet's veth up or down: down cuts the
// namespace off from the bridge, so from the other pods and the host.
func (n *simNetwork) setLink(octet int, up bool) error {
	netns, _ := n.podNames(octet)
	state := "down"
	if up {
		state = "up"
	}
	return runIP([]string{"link", "set", netns, state})
}

// close removes the bridge and everything of the slot, then releases it.
func (n *simNetwork) close() {
	removeSlot(n.slot, nil)
	n.lock.Close()
}

// socketDir is the folder of the pods' socket folders.
func (n *simNetwork) socketDir() string {
	return filepath.Join(pgsimRunDir, strconv.Itoa(n.slot))
}

func podAddr(prefix netip.Prefix, octet int) netip.Addr {
	a := prefix.Addr().As4()
	a[3] = byte(octet)
	return netip.AddrFrom4(a)
}

// lockSlot takes the slot's lock if nobody holds it. The file stays: a
// removed lock file could be locked by two holders at once.
func lockSlot(slot int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(pgsimRunDir, fmt.Sprintf("%d.lock", slot)), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// cleanStaleNetworks removes what belongs to slots that no running cluster
// holds: only names of this scheme, and only after taking the slot's lock.
func cleanStaleNetworks(logf func(string, ...any)) {
	slots := map[int]bool{}
	for _, name := range append(append(linkNames(), netnsNames()...), dirNames(pgsimNetnsConfigDir)...) {
		if m := pgsimBridgePattern.FindStringSubmatch(name); m != nil {
			slots[atoi(m[1])] = true
		} else if m := pgsimPodPattern.FindStringSubmatch(name); m != nil {
			slots[atoi(m[1])] = true
		}
	}
	for _, name := range dirNames(pgsimRunDir) {
		if slot, err := strconv.Atoi(name); err == nil {
			slots[slot] = true
		}
	}
	for slot := range slots {
		if slot >= pgsimSlots {
			continue
		}
		if lock, ok := lockSlot(slot); ok {
			removeSlot(slot, logf)
			lock.Close()
		}
	}
}

// removeSlot removes the namespaces (killing their processes), links,
// hosts files and socket folders of slot, and says so with logf, if not
// nil, when it found some. The caller holds the slot's lock.
func removeSlot(slot int, logf func(string, ...any)) {
	removed := 0
	belongs := func(name string) bool {
		if m := pgsimBridgePattern.FindStringSubmatch(name); m != nil {
			return atoi(m[1]) == slot
		}
		m := pgsimPodPattern.FindStringSubmatch(name)
		return m != nil && atoi(m[1]) == slot
	}
	for _, name := range netnsNames() {
		if belongs(name) {
			removeNetns(name)
			removed++
		}
	}
	for _, name := range dirNames(pgsimNetnsConfigDir) {
		if belongs(name) {
			_ = os.RemoveAll(filepath.Join(pgsimNetnsConfigDir, name))
		}
	}
	// Pods' veths first, then the bridge.
	links := linkNames()
	for _, name := range links {
		if belongs(name) && pgsimPodPattern.MatchString(name) {
			_ = runIP([]string{"link", "del", name})
			removed++
		}
	}
	for _, name := range links {
		if belongs(name) && pgsimBridgePattern.MatchString(name) {
			_ = runIP([]string{"link", "del", name})
			removed++
		}
	}
	_ = os.RemoveAll(filepath.Join(pgsimRunDir, strconv.Itoa(slot)))
	if removed > 0 && logf != nil {
		logf("Simulation: removed %d network namespaces and links that a former run left of PostgreSQL network %s%d", removed, pgsimName, slot)
	}
}

// removeNetns kills every process in the namespace netns, then removes
// it, its veth and its hosts file.
func removeNetns(netns string) {
	killNetnsProcesses(netns)
	_ = runIP([]string{"link", "del", netns})
	_ = runIP([]string{"netns", "del", netns})
	_ = os.RemoveAll(filepath.Join(pgsimNetnsConfigDir, netns))
}

// killNetnsProcesses kills what runs in the namespace netns, as the end of
// a container kills all its processes, and waits a little for them to go.
func killNetnsProcesses(netns string) {
	for range 20 {
		pids := netnsPIDs(netns)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// netnsPIDs are the live processes (not zombies) in the namespace netns.
func netnsPIDs(netns string) []int {
	out, err := exec.Command("ip", "netns", "pids", netns).Output()
	if err != nil {
		return nil
	}
	var pids []int
	for _, field := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(field); err == nil && !isZombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	return i < 0 || i+2 >= len(data) || data[i+2] == 'Z' || data[i+2] == 'X'
}

// hostOverlaps reports whether an address or route of the host overlaps
// prefix.
func hostOverlaps(prefix netip.Prefix) (bool, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, fmt.Errorf("simulation: list the host's addresses: %w", err)
	}
	for _, a := range addrs {
		if ipnet, ok := a.(*net.IPNet); ok {
			if p, err := netip.ParsePrefix(ipnet.String()); err == nil && p.Masked().Overlaps(prefix) {
				return true, nil
			}
		}
	}
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return false, fmt.Errorf("simulation: list the host's routes: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		for _, f := range fields[:min(2, len(fields))] { // "PREFIX …" or "TYPE PREFIX …"
			if !strings.Contains(f, "/") {
				f += "/32"
			}
			if p, err := netip.ParsePrefix(f); err == nil && p.Bits() > 0 && p.Overlaps(prefix) {
				return true, nil
			}
		}
	}
	return false, nil
}

// runIP runs ip with each argument list in turn, stopping at the first
// failure.
func runIP(commands ...[]string) error {
	for _, args := range commands {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("simulation: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	return nil
}

// linkNames are the names of the host's network interfaces.
func linkNames() []string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(ifaces))
	for _, iface := range ifaces {
		names = append(names, iface.Name)
	}
	return names
}

// netnsNames are the names of the namespaces that ip netns knows.
func netnsNames() []string {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if fields := strings.Fields(line); len(fields) > 0 {
			names = append(names, fields[0])
		}
	}
	return names
}

func dirNames(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
