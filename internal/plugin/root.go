package plugin

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/platform"
)

// Name is the plugin's binary name; kubectl runs it as `kubectl platform`.
const Name = "kubectl-platform"

// FieldManager is the field manager of every write the plugin makes, so
// that managedFields tell which fields a person set through it.
const FieldManager = "kubectl-platform"

// options are what every command shares: how to reach the cluster, where
// to write, and the clock, which tests fix.
type options struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	now     func() time.Time
	// testClient, when set, is the client of every command.
	testClient client.Client
}

// NewCommand is the root command, `kubectl platform`, with the kubeconfig
// flags kubectl users know (--kubeconfig, --context, -n, ...).
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return newCommand(&options{flags: genericclioptions.NewConfigFlags(true), streams: streams, now: time.Now})
}

func newCommand(o *options) *cobra.Command {
	root := &cobra.Command{
		Use: Name,
		// kubectl runs the plugin as `kubectl platform`: help says so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl platform"},
		Short:       "Operate the platform operator's kinds from kubectl",
		Long: `Operate PostgresClusters, BackupJobs, Tenants and Websites: read their
status in one screen, and make the changes the operator supports (a
switchover, a fence, a backup now) as ordinary API writes with your own
credentials.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       platform.BuildVersion(),
	}
	root.SetIn(o.streams.In)
	root.SetOut(o.streams.Out)
	root.SetErr(o.streams.ErrOut)
	o.flags.AddFlags(root.PersistentFlags())
	root.AddCommand(newPostgresCommand(o), newBackupJobCommand(o), newTenantCommand(o), newWebsiteCommand(o),
		newVersionCommand(o))
	setUpCompletion(root)
	fitHelp(root)
	return root
}

// newVersionCommand prints what --version prints.
func newVersionCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version (as --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(o.streams.Out, "kubectl platform version %s\n", cmd.Root().Version)
			return err
		},
	}
}
