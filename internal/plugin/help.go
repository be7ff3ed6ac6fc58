package plugin

import "github.com/spf13/cobra"

// usageTemplate is cobra's, with flags wrapped to 80 columns (cobra's own
// leaves each flag's text on one line, past any terminal) and the
// kubeconfig flags listed once, on the root command, as kubectl lists its
// global options apart.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{.LocalFlags.FlagUsagesWrapped 80 | trimTrailingWhitespaces}}{{end}}{{if .HasParent}}

Global flags (--kubeconfig, --context, -n, ...): kubectl platform --help{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more about a command.{{end}}
`

// fitHelp gives every command the usage template that fits 80 columns.
func fitHelp(root *cobra.Command) {
	root.SetUsageTemplate(usageTemplate)
}
