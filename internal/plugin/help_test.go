package plugin

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Every command's --help fits an 80-column terminal, and names the plugin
// as kubectl runs it.
func TestHelpFits80Columns(t *testing.T) {
	root := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		if err := cmd.Help(); err != nil {
			t.Fatalf("%s --help: %v", cmd.CommandPath(), err)
		}
		for i, line := range strings.Split(out.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("%s --help, line %d has %d columns:\n%s", cmd.CommandPath(), i+1, n, line)
			}
		}
		if !strings.Contains(out.String(), "kubectl platform") {
			t.Errorf("%s --help does not say kubectl platform:\n%s", cmd.CommandPath(), out.String())
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
