package plugin

import (
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// completeNames completes a command's first argument with the names of
// the objects of list's kind in the namespace the flags say (all of them,
// for a cluster-scoped kind). Completion stays silent on any error: a
// shell is no place for one.
func (o *options) completeNames(list client.ObjectList) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) != 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := o.client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, err := o.namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		l := list.DeepCopyObject().(client.ObjectList)
		if err := c.List(cmd.Context(), l, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []cobra.Completion
		for _, item := range items {
			if obj, ok := item.(client.Object); ok {
				names = append(names, obj.GetName())
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
