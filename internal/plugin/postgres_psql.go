package plugin

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

func newPsqlCommand(o *options) *cobra.Command {
	var replica bool
	var psqlPath string
	cmd := &cobra.Command{
		Use:   "psql NAME [INSTANCE] [-- PSQL-ARGS...]",
		Short: "psql on the primary or a replica, through the API server",
		Long: `Run psql (on your PATH, or --psql) as the application's owner, connected to
the primary (a replica with --replica, or the INSTANCE named) through a
port-forward of the API server to the instance's pod, as kubectl
port-forward makes: no pod address is dialled, and it needs the rights to
create pods/portforward and to read the application's Secret, whose
password (in a temporary file) and CA (to verify the server, sslmode
verify-full) it uses. Arguments after -- go to psql.`,
		Example: "  kubectl platform pg psql db -n shop\n" +
			"  kubectl platform pg psql db --replica -- -c 'SELECT pg_is_in_recovery()'",
		Args: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args = args[:dash]
			}
			return cobra.RangeArgs(1, 2)(cmd, args)
		},
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			var psqlArgs []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args, psqlArgs = args[:dash], args[dash:]
			}
			ctx := cmd.Context()
			c, pg, err := o.getPostgresCluster(ctx, args[0])
			if err != nil {
				return err
			}
			named := ""
			if len(args) == 2 {
				named = args[1]
			}
			instance, err := psqlInstance(pg, named, replica)
			if err != nil {
				return err
			}
			secret := &corev1.Secret{}
			name := pgspec.AppSecret(pg)
			if err := c.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: name}, secret); err != nil {
				return fmt.Errorf("read the application's Secret %s/%s: %w", pg.Namespace, name, err)
			}
			conn, err := psqlConnection(pg, secret)
			if err != nil {
				return err
			}
			config, err := o.flags.ToRESTConfig()
			if err != nil {
				return fmt.Errorf("read the kubeconfig: %w", err)
			}
			config.UserAgent = Name
			local, stop, err := forwardPort(config, pg.Namespace, instance, pgspec.Port, o.streams.ErrOut)
			if err != nil {
				return err
			}
			defer stop()
			return runPsql(ctx, psqlPath, conn, local, psqlArgs, o)
		},
	}
	cmd.Flags().BoolVar(&replica, "replica", false, "connect to the ready replica least behind, not the primary")
	cmd.Flags().StringVar(&psqlPath, "psql", "psql", "the psql to run")
	return cmd
}

// psqlInstance is the instance to connect to: the one named, else a
// replica (the ready, unfenced one least behind) with replica, else the
// current primary.
func psqlInstance(pg *v1alpha1.PostgresCluster, named string, replica bool) (string, error) {
	switch {
	case named != "" && replica:
		return "", fmt.Errorf("name an instance or pass --replica, not both")
	case named != "":
		for _, in := range pg.Status.Instances {
			if in.Name == named {
				return named, nil
			}
		}
		return "", fmt.Errorf("%s is not an instance of %s (status.instances)", named, pg.Name)
	case replica:
		target, err := switchoverTarget(pg)
		if err != nil {
			return "", fmt.Errorf("no replica to connect to: %w", err)
		}
		return target, nil
	case pg.Status.CurrentPrimary == "":
		return "", fmt.Errorf("%s has no primary now (status.currentPrimary): pass --replica or name an instance", pg.Name)
	}
	return pg.Status.CurrentPrimary, nil
}

// psqlConn is what psql connects with, from the application's Secret.
type psqlConn struct {
	user, password, dbname string
	caCert                 []byte
}

func psqlConnection(pg *v1alpha1.PostgresCluster, secret *corev1.Secret) (psqlConn, error) {
	role, database := pg.Spec.Bootstrap.ApplicationOwner()
	c := psqlConn{user: string(secret.Data[corev1.BasicAuthUsernameKey]), password: string(secret.Data[corev1.BasicAuthPasswordKey]),
		dbname: string(secret.Data["dbname"]), caCert: secret.Data[pgspec.CACertKey]}
	if c.user == "" {
		c.user = role
	}
	if c.dbname == "" {
		c.dbname = database
	}
	if c.password == "" {
		return c, fmt.Errorf("the Secret %s/%s holds no password", secret.Namespace, secret.Name)
	}
	if len(c.caCert) == 0 {
		return c, fmt.Errorf("the Secret %s/%s holds no %s to verify the server with", secret.Namespace, secret.Name, pgspec.CACertKey)
	}
	return c, nil
}

// conninfo is libpq's connection string to the forwarded port: the
// server's certificate is checked against localhost, a name it covers, and
// the connection goes to 127.0.0.1. Values are quoted as libpq reads them.
func (c psqlConn) conninfo(port uint16, rootCert string) string {
	quote := func(s string) string {
		return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
	}
	return fmt.Sprintf("host=localhost hostaddr=127.0.0.1 port=%d user=%s dbname=%s sslmode=verify-full sslrootcert=%s",
		port, quote(c.user), quote(c.dbname), quote(rootCert))
}

// forwardPort forwards a local port on 127.0.0.1 to port of the pod,
// through the API server's pods/portforward, and returns the local port
// and how to stop.
func forwardPort(config *rest.Config, namespace, pod string, port int, errOut io.Writer) (uint16, func(), error) {
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return 0, nil, fmt.Errorf("make a client of %s: %w", config.Host, err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return 0, nil, fmt.Errorf("port-forward: %w", err)
	}
	url := clientset.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stopCh, readyCh, io.Discard, errOut)
	if err != nil {
		return 0, nil, fmt.Errorf("port-forward to pod %s/%s: %w", namespace, pod, err)
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-readyCh:
	case err := <-failed:
		return 0, nil, fmt.Errorf("port-forward to pod %s/%s: %w", namespace, pod, err)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(stopCh)
		return 0, nil, fmt.Errorf("port-forward to pod %s/%s: no local port (%v)", namespace, pod, err)
	}
	return ports[0].Local, func() { close(stopCh) }, nil
}

// runPsql runs psql on the forwarded port with the terminal's streams; the
// password and the CA are in files of a temporary folder (0700), removed
// after.
func runPsql(ctx context.Context, psqlPath string, conn psqlConn, port uint16, args []string, o *options) error {
	dir, err := os.MkdirTemp("", "kubectl-platform-psql-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	rootCert, passFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "pgpass")
	escape := strings.NewReplacer(`\`, `\\`, `:`, `\:`)
	pass := fmt.Sprintf("localhost:%d:*:%s:%s\n", port, escape.Replace(conn.user), escape.Replace(conn.password))
	if err := os.WriteFile(passFile, []byte(pass), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(rootCert, conn.caCert, 0o600); err != nil {
		return err
	}
	psql := exec.CommandContext(ctx, psqlPath, append([]string{"-d", conn.conninfo(port, rootCert)}, args...)...)
	psql.Env = append(os.Environ(), "PGPASSFILE="+passFile)
	psql.Stdin, psql.Stdout, psql.Stderr = o.streams.In, o.streams.Out, o.streams.ErrOut
	if err := psql.Run(); err != nil {
		return fmt.Errorf("%s: %w", psqlPath, err)
	}
	return nil
}
