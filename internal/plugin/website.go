package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/plugin/view"
)

func newWebsiteCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "website",
		Aliases: []string{"ws"},
		Short:   "A Website's status",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "status NAME",
		Short: "What kubectl get shows, and why the Website is not Ready",
		Long: `Show a Website as kubectl get does, then whether it serves and, when it
does not, why: the cause Degraded names, else the Ready condition's
reason; then every condition with its message.`,
		Example:           "  kubectl platform ws status my-site",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNames(&websitev1.WebsiteList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ns, err := o.namespace()
			if err != nil {
				return err
			}
			ws := &websitev1.Website{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, ws); err != nil {
				return fmt.Errorf("read Website %s/%s: %w", ns, args[0], err)
			}
			view.WebsiteStatus(o.streams.Out, ws, o.now())
			return nil
		},
	})
	return cmd
}
