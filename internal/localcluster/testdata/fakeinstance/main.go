// Command fakeinstance stands in, in the tests of the local cluster's
// PostgreSQL simulation, for the operator's instance manager
// (platform-operator instance run --kubeconfig FILE): it shows what the
// simulation gave it, and runs no PostgreSQL.
//
//   - It appends "start POD_NAME POD_UID uid=UID" to PGDATA/history, so
//     that data left by an earlier pod on the same claim shows.
//   - It starts a child, "postmaster", and writes its PID into
//     PGDATA/postmaster.pid as PostgreSQL does.
//   - It serves TCP on POD_IP:5432: it writes its pod's name and a newline,
//     then echoes.
//   - Every half second it reads its pod through the kubeconfig, patches
//     the annotation fake.example.com/started on it once, resolves and
//     dials each host:port of FAKE_PEERS (comma-separated), and writes what
//     it saw to PGDATA/status.json.
//   - On SIGTERM it exits, unless FAKE_IGNORE_SIGTERM is "true".
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Status is what PGDATA/status.json holds.
type Status struct {
	Time       time.Time       `json:"time"`
	PID        int             `json:"pid"`
	UID        int             `json:"uid"`
	Addrs      []string        `json:"addrs"`
	API        string          `json:"api"`
	Annotated  bool            `json:"annotated"`
	Peers      map[string]Peer `json:"peers"`
	Postmaster string          `json:"postmaster"`
}

// Peer is what dialling a peer showed.
type Peer struct {
	Addrs []string `json:"addrs"`
	Name  string   `json:"name"`
	Error string   `json:"error"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "postmaster" {
		select {} // until killed
	}
	if len(os.Args) != 5 || os.Args[1] != "instance" || os.Args[2] != "run" || os.Args[3] != "--kubeconfig" {
		fail(fmt.Errorf("usage: %s instance run --kubeconfig FILE", os.Args[0]))
	}
	if err := run(os.Args[4]); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "fakeinstance:", err)
	os.Exit(1)
}

func run(kubeconfig string) error {
	name, namespace, podIP, pgdata := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE"), os.Getenv("POD_IP"), os.Getenv("PGDATA")
	if err := os.MkdirAll(pgdata, 0o700); err != nil {
		return err
	}
	if err := appendLine(filepath.Join(pgdata, "history"), fmt.Sprintf("start %s %s uid=%d", name, os.Getenv("POD_UID"), os.Getuid())); err != nil {
		return err
	}
	fmt.Printf("fakeinstance: pod %s/%s at %s, PGDATA %s\n", namespace, name, podIP, pgdata)

	postmaster := exec.Command(os.Args[0], "postmaster")
	if err := postmaster.Start(); err != nil {
		return err
	}
	postmasterDone := make(chan error, 1)
	go func() { postmasterDone <- postmaster.Wait() }()
	if err := os.WriteFile(filepath.Join(pgdata, "postmaster.pid"), fmt.Appendf(nil, "%d\n%s\n", postmaster.Process.Pid, pgdata), 0o600); err != nil {
		return err
	}

	l, err := net.Listen("tcp", net.JoinHostPort(podIP, "5432"))
	if err != nil {
		return err
	}
	go serve(l, name)

	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.Timeout = 2 * time.Second
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM)
	ticker := time.NewTicker(500 * time.Millisecond)
	defer ticker.Stop()
	status := Status{PID: os.Getpid(), UID: os.Getuid(), Postmaster: "running"}
	for {
		select {
		case <-signals:
			fmt.Println("fakeinstance: SIGTERM")
			if os.Getenv("FAKE_IGNORE_SIGTERM") != "true" {
				_ = appendLine(filepath.Join(pgdata, "history"), "stop "+name)
				_ = postmaster.Process.Kill()
				return nil
			}
		case err := <-postmasterDone:
			status.Postmaster = fmt.Sprintf("exited: %v", err)
		case <-ticker.C:
			observe(clientset, namespace, name, &status)
			if err := writeJSON(filepath.Join(pgdata, "status.json"), status); err != nil {
				return err
			}
		}
	}
}

// observe fills status with what the pod sees now.
func observe(clientset kubernetes.Interface, namespace, name string, status *Status) {
	status.Time = time.Now()
	status.Addrs = nil
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			status.Addrs = append(status.Addrs, a.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := clientset.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
		status.API = err.Error()
	} else {
		status.API = "ok"
	}
	if !status.Annotated && status.API == "ok" {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"fake.example.com/started":"%d"}}}`, os.Getpid())
		_, err := clientset.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		status.Annotated = err == nil
		if err != nil {
			status.API = "patch: " + err.Error()
		}
	}
	status.Peers = map[string]Peer{}
	for _, peer := range strings.Split(os.Getenv("FAKE_PEERS"), ",") {
		if peer != "" {
			status.Peers[peer] = dial(peer)
		}
	}
}

func dial(peer string) Peer {
	var p Peer
	host, _, _ := net.SplitHostPort(peer)
	p.Addrs, _ = net.LookupHost(host)
	conn, err := net.DialTimeout("tcp", peer, time.Second)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		p.Error = err.Error()
	}
	p.Name = strings.TrimSpace(line)
	return p
}

func serve(l net.Listener, name string) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			if _, err := io.WriteString(conn, name+"\n"); err == nil {
				_, _ = io.Copy(conn, conn)
			}
		}()
	}
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	return err
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
