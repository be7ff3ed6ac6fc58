package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/platform"
)

// writeBindings writes dir/role_binding.yaml: for each role of
// dir/role.yaml, a binding of the same name that grants it to the
// operator's ServiceAccount; a ClusterRoleBinding for a ClusterRole, a
// RoleBinding in the Role's namespace for a Role.
func writeBindings(dir string) error {
	roles, err := readRoles(filepath.Join(dir, "role.yaml"))
	if err != nil {
		return err
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: platform.Name, Namespace: platform.Namespace}}
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString("# Grants the roles of role.yaml to the operator's ServiceAccount.\n")
	for i, role := range roles {
		meta := metav1.ObjectMeta{Name: role.Name, Namespace: role.Namespace}
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: role.Kind, Name: role.Name}
		var binding any
		switch role.Kind {
		case "ClusterRole":
			binding = &rbacv1.ClusterRoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: meta, RoleRef: ref, Subjects: subjects,
			}
		case "Role":
			binding = &rbacv1.RoleBinding{
				TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
				ObjectMeta: meta, RoleRef: ref, Subjects: subjects,
			}
		default:
			return fmt.Errorf("%s: unexpected kind %s", filepath.Join(dir, "role.yaml"), role.Kind)
		}
		doc, err := yaml.Marshal(binding)
		if err != nil {
			return fmt.Errorf("marshal the binding of %s %s: %w", role.Kind, role.Name, err)
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	return writeFile(filepath.Join(dir, "role_binding.yaml"), out.Bytes())
}

// readRoles returns the roles of a role.yaml that controller-gen wrote, in
// its order.
func readRoles(path string) ([]metav1.PartialObjectMetadata, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the generated roles: %w", err)
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var roles []metav1.PartialObjectMetadata
	for {
		var role metav1.PartialObjectMetadata
		err := decoder.Decode(&role)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("decode %s: %w", path, err)
		}
		if role.Kind == "" {
			continue
		}
		roles = append(roles, role)
	}
	if len(roles) == 0 {
		return nil, fmt.Errorf("%s holds no role", path)
	}
	return roles, nil
}
