package operator

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func env(vars map[string]string) func(string) string {
	return func(key string) string { return vars[key] }
}

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(g Gomega, o Options)
		wantErr string
	}{
		{
			name: "defaults on a terminal",
			check: func(g Gomega, o Options) {
				g.Expect(o.Namespaces).To(BeEmpty(), "all namespaces")
				g.Expect(o.LogFormat).To(Equal("text"))
				g.Expect(o.LeaderElect).To(BeFalse())
				g.Expect(o.MetricsBindAddress).To(Equal(":8443"))
				g.Expect(o.HealthProbeBindAddress).To(Equal(":8081"))
				g.Expect(o.ClusterDomain).To(Equal("cluster.local"))
				g.Expect(o.Controllers).To(Equal([]string{"*"}), "every known controller")
				g.Expect(o.PprofBindAddress).To(BeEmpty(), "no profiling unless asked")
				g.Expect(o.KubeAPIQPS).To(BeEquivalentTo(NoClientRateLimit), "no client-side limit: Priority and Fairness protects the API server")
				g.Expect(o.MaxConcurrentReconciles).To(Equal(DefaultMaxConcurrentReconciles))
			},
		},
		{
			name: "a client-side limit, its burst twice the rate unless given",
			args: []string{"--kube-api-qps=50"},
			check: func(g Gomega, o Options) {
				g.Expect(o.KubeAPIQPS).To(BeEquivalentTo(50))
				g.Expect(o.KubeAPIBurst).To(Equal(100))
			},
		},
		{
			name: "a client-side limit and its burst",
			args: []string{"--kube-api-qps=0.5", "--kube-api-burst=3"},
			check: func(g Gomega, o Options) {
				g.Expect(o.KubeAPIQPS).To(BeEquivalentTo(0.5))
				g.Expect(o.KubeAPIBurst).To(Equal(3))
			},
		},
		{
			name: "0 means no limit, not client-go's default of 5",
			args: []string{"--kube-api-qps=0", "--kube-api-burst=10"},
			check: func(g Gomega, o Options) {
				g.Expect(o.KubeAPIQPS).To(BeEquivalentTo(NoClientRateLimit))
			},
		},
		{name: "a negative burst", args: []string{"--kube-api-qps=10", "--kube-api-burst=-1"}, wantErr: "--kube-api-burst must not be negative"},
		{
			name: "controllers, repeated and comma-separated",
			args: []string{"--controllers=*,website", "--controllers", "-website"},
			check: func(g Gomega, o Options) {
				g.Expect(o.Controllers).To(Equal([]string{"*", "website", "-website"}))
			},
		},
		{
			name: "profiling on request",
			args: []string{"--pprof-bind-address=127.0.0.1:8082"},
			check: func(g Gomega, o Options) {
				g.Expect(o.PprofBindAddress).To(Equal("127.0.0.1:8082"))
			},
		},
		{
			// The kinds' own flags (their Descriptors') parse with the rest.
			name:  "adoption from the tutorial and the tenants' API server address",
			args:  []string{"--adopt-tutorial", "--tenant-api-server=https://api.example.com:6443", "--tenant-api-server-ca-file=ca.pem"},
			check: func(g Gomega, o Options) {},
		},
		{name: "a tenant API server without https", args: []string{"--tenant-api-server=http://api.example.com"}, wantErr: "--tenant-api-server must be an https URL"},
		{name: "a tenant API server with a path", args: []string{"--tenant-api-server=https://api.example.com/x"}, wantErr: "--tenant-api-server must be an https URL"},
		{name: "a tenant API server CA alone", args: []string{"--tenant-api-server-ca-file=ca.pem"}, wantErr: "--tenant-api-server-ca-file needs --tenant-api-server"},
		{
			name:  "the former --wait-for-api-server is accepted",
			args:  []string{"--wait-for-api-server"},
			check: func(g Gomega, o Options) {},
		},
		{name: "an unknown controller", args: []string{"--controllers=nope"}, wantErr: `--controllers: unknown controller "nope"; known controllers: website`},
		{name: "no controller left", args: []string{"--controllers=-website"}, wantErr: "--controllers=-website leaves no controller to run"},
		{
			name: "JSON logs and the pod's namespace in a cluster",
			args: []string{"--leader-elect"},
			env:  map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "POD_NAMESPACE": "ops"},
			check: func(g Gomega, o Options) {
				g.Expect(o.LogFormat).To(Equal("json"))
				g.Expect(o.LeaderElectionNamespace).To(Equal("ops"))
			},
		},
		{
			name: "repeated and comma-separated namespaces",
			args: []string{"--namespace", "a", "--namespace=b,c", "--namespace", "a"},
			check: func(g Gomega, o Options) {
				g.Expect(o.Namespaces).To(Equal([]string{"a", "b", "c"}))
			},
		},
		{name: "both scopes", args: []string{"--namespace", "a", "--all-namespaces"}, wantErr: "exclude each other"},
		{name: "a namespace that is not a name", args: []string{"--namespace", "Team_A"}, wantErr: `"Team_A" is not a namespace name`},
		{name: "unknown flag", args: []string{"--namespaces", "a"}, wantErr: "flag provided but not defined: -namespaces"},
		{name: "log format", args: []string{"--log-format", "yaml"}, wantErr: `--log-format must be json or text, not "yaml"`},
		{name: "leader election outside a cluster needs a namespace", args: []string{"--leader-elect"}, wantErr: "--leader-election-namespace"},
		{name: "no workers", args: []string{"--max-concurrent-reconciles", "0"}, wantErr: "at least 1"},
		{name: "arguments", args: []string{"run"}, wantErr: `unexpected argument "run"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			opts, err := ParseOptions(tt.args, env(tt.env), &bytes.Buffer{})
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, opts)
		})
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	_, err := ParseOptions([]string{"--help"}, env(nil), &out)
	g.Expect(errors.Is(err, flag.ErrHelp)).To(BeTrue())
	g.Expect(out.String()).To(ContainSubstring("Usage: platform-operator"))
	g.Expect(out.String()).To(ContainSubstring("-leader-elect"))
	g.Expect(out.String()).To(ContainSubstring("known: website"), "--controllers lists the known controllers")
}

// The client asks for gzip only when told to: in a cluster, compressing
// every watch event costs both sides CPU for traffic that needs no saving.
func TestRESTConfigCompression(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600)).To(Succeed())

	for _, c := range []struct {
		args            []string
		wantCompression bool
	}{
		{nil, false},
		{[]string{"--kube-api-compression"}, true},
	} {
		opts, err := ParseOptions(append([]string{"--kubeconfig", kubeconfig}, c.args...), func(string) string { return "" }, io.Discard)
		g.Expect(err).NotTo(HaveOccurred())
		config, err := RESTConfig(opts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(config.DisableCompression).To(Equal(!c.wantCompression), "args %v", c.args)
	}
}
