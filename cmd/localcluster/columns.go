package main

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// shownKind is how make run shows the objects of one kind.
type shownKind struct {
	// resource is the kind's plural.group, for kubectl get; plural is what
	// a person types.
	resource, plural string
	// args follow the resource in kubectl get.
	args []string
	// shownArgs are those printed with the command: the scope alone.
	shownArgs string
}

// showKind is how make run shows the objects of crd: the columns of kubectl
// get (the CRD's printer columns of its storage version), but those of
// priority above 0 and the dates (AGE would change every second), and, for
// a namespaced kind, every namespace.
func showKind(crd *apiextensionsv1.CustomResourceDefinition) shownKind {
	columns := []string{"NAME:.metadata.name"}
	kind := shownKind{resource: crd.Spec.Names.Plural + "." + crd.Spec.Group, plural: crd.Spec.Names.Plural}
	if crd.Spec.Scope == apiextensionsv1.NamespaceScoped {
		columns = append([]string{"NAMESPACE:.metadata.namespace"}, columns...)
		kind.args = []string{"--all-namespaces"}
		kind.shownArgs = "--all-namespaces"
	}
	for _, version := range crd.Spec.Versions {
		if !version.Storage {
			continue
		}
		for _, c := range version.AdditionalPrinterColumns {
			if c.Priority > 0 || c.Type == "date" {
				continue
			}
			columns = append(columns, fmt.Sprintf("%s:%s", strings.ToUpper(c.Name), c.JSONPath))
		}
	}
	kind.args = append(kind.args, "-o", "custom-columns="+strings.Join(columns, ","))
	return kind
}
