package plugin

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

func newTenantCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tenant",
		Aliases: []string{"tnt"},
		Short:   "A Tenant's credentials",
	}
	cmd.AddCommand(newKubeconfigCommand(o))
	return cmd
}

func newKubeconfigCommand(o *options) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Write the kubeconfig of a Tenant's ServiceAccount",
		Long: `Write the kubeconfig that a Tenant's credentials Secret holds (its
ServiceAccount's token, which the operator renews), to --file (mode 0600)
or to standard output. The Tenant must ask for credentials
(spec.credentials); you must be allowed to read the Secret.`,
		Example:           "  kubectl platform tenant kubeconfig team-a -f team-a.kubeconfig",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNames(&v1alpha1.TenantList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			t := &v1alpha1.Tenant{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Name: args[0]}, t); err != nil {
				return fmt.Errorf("read Tenant %s: %w", args[0], err)
			}
			ns, name, err := credentialsSecret(t)
			if err != nil {
				return err
			}
			s := &corev1.Secret{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
				return fmt.Errorf("read the credentials Secret %s/%s of Tenant %s: %w", ns, name, t.Name, err)
			}
			data, ok := s.Data[v1alpha1.TenantKubeconfigKey]
			if !ok {
				return fmt.Errorf("the Secret %s/%s of Tenant %s has no key kubeconfig", ns, name, t.Name)
			}
			if file == "" {
				_, err := o.streams.Out.Write(data)
				return err
			}
			if err := os.WriteFile(file, data, 0o600); err != nil {
				return fmt.Errorf("write the kubeconfig of Tenant %s: %w", t.Name, err)
			}
			fmt.Fprintf(o.streams.ErrOut, "Wrote %s: Tenant %s's ServiceAccount %s%s\n", file, t.Name, serviceAccountOf(t), expiry(t))
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to this file (mode 0600) rather than standard output")
	return cmd
}

// credentialsSecret is where the Tenant's kubeconfig is: its home
// namespace (the first) and the Secret its status (else its spec) names.
func credentialsSecret(t *v1alpha1.Tenant) (namespace, name string, err error) {
	if t.Spec.Credentials == nil {
		return "", "", fmt.Errorf("Tenant %s asks for no credentials (spec.credentials): it has no kubeconfig", t.Name)
	}
	if len(t.Spec.Namespaces) == 0 {
		return "", "", errors.New("Tenant " + t.Name + " has no namespace")
	}
	name = t.Spec.Credentials.SecretName
	if t.Status.Credentials != nil && t.Status.Credentials.SecretName != "" {
		name = t.Status.Credentials.SecretName
	}
	if name == "" {
		name = "tenant-kubeconfig"
	}
	return t.Spec.Namespaces[0], name, nil
}

func serviceAccountOf(t *v1alpha1.Tenant) string {
	sa := "tenant"
	if t.Spec.ServiceAccount != nil && t.Spec.ServiceAccount.Name != "" {
		sa = t.Spec.ServiceAccount.Name
	}
	return t.Spec.Namespaces[0] + "/" + sa
}

func expiry(t *v1alpha1.Tenant) string {
	if t.Status.Credentials == nil || t.Status.Credentials.ExpiresAt == nil {
		return ""
	}
	return ", token valid until " + t.Status.Credentials.ExpiresAt.UTC().Format("2006-01-02 15:04 MST")
}
