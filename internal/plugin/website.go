package plugin

import (
	"github.com/spf13/cobra"

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
			ws := &websitev1.Website{}
			if _, err := o.getNamed(cmd.Context(), "Website", args[0], ws); err != nil {
				return err
			}
			view.WebsiteStatus(o.streams.Out, ws, o.now())
			return nil
		},
	})
	return cmd
}
