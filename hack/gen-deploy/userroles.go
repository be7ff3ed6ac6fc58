package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// userRolesFile holds, in a component, the ClusterRoles that give people
// the component's kinds through the default user-facing roles.
const userRolesFile = "user_roles.yaml"

// Labels by which the built-in ClusterRoles view, edit and admin aggregate
// the rules of other ClusterRoles.
const (
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
)

// userRoles are the ClusterRoles of a component's kinds that the built-in
// user-facing roles aggregate, from the component's CRDs, as the ecosystem
// ships them (cert-manager's cert-manager-view and cert-manager-edit):
//
//   - NAME-view, aggregated into view, edit and admin: read every kind and
//     its status and scale. A kind's objects and status hold no Secret.
//   - NAME-edit, aggregated into edit and admin: create, change and delete
//     the namespaced kinds, and scale them. Status stays the operator's to
//     write.
//
// A cluster-scoped kind (a Tenant) gets no edit role: view, edit and admin
// are granted per namespace, where a cluster-scoped kind has no objects,
// and creating one (a Tenant binds admin in namespaces it makes) is the
// cluster administrator's to grant knowingly. Nil when the component serves
// no kind.
func userRoles(name string, crds []apiextensionsv1.CustomResourceDefinition) []rbacv1.ClusterRole {
	if len(crds) == 0 {
		return nil
	}
	var view, edit []rbacv1.PolicyRule
	for _, crd := range crds {
		plural := crd.Spec.Names.Plural
		read := []string{plural}
		var scale bool
		for _, v := range crd.Spec.Versions {
			if v.Subresources == nil {
				continue
			}
			if v.Subresources.Status != nil && !slices.Contains(read, plural+"/status") {
				read = append(read, plural+"/status")
			}
			scale = scale || v.Subresources.Scale != nil
		}
		if scale {
			read = append(read, plural+"/scale")
		}
		group := []string{crd.Spec.Group}
		view = append(view, rbacv1.PolicyRule{APIGroups: group, Resources: read, Verbs: []string{"get", "list", "watch"}})
		if crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
			continue
		}
		edit = append(edit, rbacv1.PolicyRule{APIGroups: group, Resources: []string{plural},
			Verbs: []string{"create", "update", "patch", "delete", "deletecollection"}})
		if scale {
			edit = append(edit, rbacv1.PolicyRule{APIGroups: group, Resources: []string{plural + "/scale"}, Verbs: []string{"update", "patch"}})
		}
	}
	role := func(suffix string, rules []rbacv1.PolicyRule, aggregateTo ...string) rbacv1.ClusterRole {
		labels := map[string]string{}
		for _, l := range aggregateTo {
			labels[l] = "true"
		}
		return rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: baseRoleName + "-" + name + "-" + suffix, Labels: labels},
			Rules:      rules,
		}
	}
	roles := []rbacv1.ClusterRole{role("view", view, aggregateToView, aggregateToEdit, aggregateToAdmin)}
	if len(edit) > 0 {
		roles = append(roles, role("edit", edit, aggregateToEdit, aggregateToAdmin))
	}
	return roles
}

// writeUserRoles writes dir/user_roles.yaml from the CRDs of dir/crd.yaml,
// and tells whether it wrote one: a component without CRDs has none.
func writeUserRoles(dir string, c component) (bool, error) {
	path := filepath.Join(dir, userRolesFile)
	var crds []apiextensionsv1.CustomResourceDefinition
	if len(c.crds) > 0 {
		var err error
		if crds, err = readCRDs(filepath.Join(dir, "crd.yaml")); err != nil {
			return false, err
		}
	}
	roles := userRoles(c.name, crds)
	if len(roles) == 0 {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return false, fmt.Errorf("remove the user roles of kinds it no longer serves: %w", err)
		}
		return false, nil
	}
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString(`# What people may do with the kinds of this component, through the built-in
# user-facing roles, which aggregate these ClusterRoles by their labels: view
# reads the kinds and their status; edit and admin also create, change and
# delete the namespaced ones. Creating a BackupJob is creating pods: see the
# README, "Security".
`)
	for i, role := range roles {
		doc, err := yaml.Marshal(role)
		if err != nil {
			return false, fmt.Errorf("marshal ClusterRole %s: %w", role.Name, err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	return true, writeFile(path, out.Bytes())
}

// readCRDs reads the CRDs of a crd.yaml that copyCRDs wrote.
func readCRDs(path string) ([]apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the CRDs: %w", err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var crds []apiextensionsv1.CustomResourceDefinition
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		err := decoder.Decode(&crd)
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if crd.Kind == "CustomResourceDefinition" {
			crds = append(crds, crd)
		}
	}
}
