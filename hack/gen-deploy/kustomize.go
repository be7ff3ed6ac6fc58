package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/platform"
)

// nameLabel marks every object that deploy/ installs, so that
// kubectl get -l app.kubernetes.io/name=platform-operator finds them.
var nameLabel = []types.Label{{Pairs: map[string]string{"app.kubernetes.io/name": platform.Name}}}

// writeComponentKustomization writes the kustomization of a component, whose
// resources are in its folder.
func writeComponentKustomization(dir string, c component, resources []string) error {
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.ComponentVersion, Kind: types.ComponentKind},
		Labels:    nameLabel,
		Resources: resources,
	}
	comment := fmt.Sprintf(`# The %[1]s component: what the controller of %[2]s
# needs, and nothing else. role.yaml holds the rights that its RBAC markers
# ask for (controller-gen); role_binding.yaml grants them to the operator's
# ServiceAccount.`, c.name, filepath.ToSlash(c.pkg))
	if len(c.crds) > 0 {
		comment += "\n# crd.yaml holds the CRDs of the kinds it serves (controller-gen from api/);" +
			"\n# user_roles.yaml what view, edit and admin grant people of those kinds."
	}
	for _, r := range resources {
		if strings.HasSuffix(r, policySuffix) {
			comment += "\n# " + r + " is an admission policy written by hand; see the file."
		}
	}
	return writeKustomization(filepath.Join(dir, "kustomization.yaml"), comment, k)
}

// writeDefaultKustomization writes deploy/kustomization.yaml: the base and
// every component.
func writeDefaultKustomization(root string, components []component) error {
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{"base"},
	}
	for _, c := range components {
		k.Components = append(k.Components, "components/"+c.name)
	}
	k.Replacements = []types.ReplacementField{{Replacement: OperatorImageReplacement()}}
	comment := `# kubectl apply -k deploy/ installs the operator cluster-wide with every kind
# it serves, as kubectl apply -f deploy/install.yaml does. To serve only some
# kinds, delete the lines of the others under components: the cluster then
# gets neither their CRDs nor the rights that their controllers need. Set your
# image here with
#   images: [{name: example.com/platform-operator, newName: REGISTRY/platform-operator, newTag: TAG}]
# The replacement below copies it into OPERATOR_IMAGE, the image PostgreSQL
# pods take the instance manager from: kustomize applies base's own copy
# before this file's images: entry. make generate writes this file back with
# every component.`
	return writeKustomization(filepath.Join(root, "deploy/kustomization.yaml"), comment, k)
}

// OperatorImageReplacement copies the operator container's image into its
// OPERATOR_IMAGE variable. A kustomization that sets the image with an
// images: entry must carry it too: kustomize runs the replacements of the
// kustomizations below (deploy/base's) before the images: of the one on top.
func OperatorImageReplacement() types.Replacement {
	deployment := resid.ResId{Gvk: resid.Gvk{Group: "apps", Version: "v1", Kind: "Deployment"}, Name: platform.Name}
	return types.Replacement{
		Source: &types.SourceSelector{ResId: deployment, FieldPath: "spec.template.spec.containers.[name=operator].image"},
		Targets: []*types.TargetSelector{{
			Select:     &types.Selector{ResId: deployment},
			FieldPaths: []string{"spec.template.spec.containers.[name=operator].env.[name=" + platform.ImageEnv + "].value"},
		}},
	}
}

func writeKustomization(path, comment string, k types.Kustomization) error {
	data, err := yaml.Marshal(k)
	if err != nil {
		return fmt.Errorf("marshal %s: %w", path, err)
	}
	return writeFile(path, []byte(header+comment+"\n"+string(data)))
}

// renderInstall writes dir/install.yaml: the kustomization of dir rendered as
// kustomize build would, for kubectl apply -f.
func renderInstall(dir string) error {
	data, err := render(dir)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	out.WriteString(header)
	out.WriteString("# The kustomization of this folder, rendered for kubectl apply -f; its sources explain each object.\n")
	out.Write(data)
	return writeFile(filepath.Join(dir, "install.yaml"), out.Bytes())
}

// render builds the kustomization of dir, in the order kubectl apply -k
// applies: namespaces and CRDs first.
func render(dir string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	data, err := resources.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", dir, err)
	}
	return data, nil
}
