package plugin

import (
	"fmt"

	"github.com/spf13/cobra"
)

// kubectlComplete is the script kubectl (1.26 and later) runs to complete
// `kubectl platform ...` when it finds it on the PATH as
// kubectl_complete-platform.
const kubectlComplete = `#!/bin/sh
# kubectl runs this to complete "kubectl platform ...".
exec kubectl-platform __complete "$@"
`

// setUpCompletion adds cobra's completion command with help that fits 80
// columns (cobra's own runs past it) and tells how completion works under
// kubectl, plus `completion kubectl`, the helper script kubectl looks for.
func setUpCompletion(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() != "completion" {
			continue
		}
		cmd.Long = `Write a shell completion script. Run as kubectl platform, the plugin is
completed by kubectl itself (1.26 and later) through an executable named
kubectl_complete-platform on the PATH; "completion kubectl" writes it.
Run as kubectl-platform, it is completed by the script for its shell.`
		for _, sub := range cmd.Commands() {
			sub.Long = fmt.Sprintf(`Write the %s completion script of kubectl-platform to standard output.
Load it in the shell's start-up file, for example:

  source <(kubectl-platform completion %s)`, sub.Name(), sub.Name())
		}
		cmd.AddCommand(&cobra.Command{
			Use:   "kubectl",
			Short: "Write kubectl_complete-platform, for kubectl platform <TAB>",
			Long: `Write the script kubectl runs to complete "kubectl platform ...". Put it on
the PATH, executable, as kubectl_complete-platform.`,
			Example: "  kubectl-platform completion kubectl > ~/bin/kubectl_complete-platform\n" +
				"  chmod +x ~/bin/kubectl_complete-platform",
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := fmt.Fprint(cmd.OutOrStdout(), kubectlComplete)
				return err
			},
		})
	}
}
