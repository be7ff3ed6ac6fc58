package main

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// operatorContainer is the container of the operator's Deployment whose
// image, arguments and resources the values set.
const operatorContainer = "operator"

// allNamespaces is the first argument of the operator in deploy/base, which
// the namespaced overlay replaces with --namespace=NAME.
const allNamespaces = "--all-namespaces"

// chart is what the chart is made of, read from deploy/.
type chart struct {
	// namespace is the operator's own namespace in deploy/; the chart
	// installs into the release's namespace instead.
	namespace string
	// base is deploy/base but its Namespace.
	base []*unstructured.Unstructured
	// image, replicas and resources are those of the operator's
	// Deployment: the values' defaults.
	imageRepository, imageTag string
	replicas                  int64
	resources                 map[string]any
	components                []component
	// options are the components that serve no kind (monitoring): each
	// is off by default, behind its own switch.
	options    []component
	namespaced namespacedOverlay
}

// component is one kind's component of deploy/components.
type component struct {
	// name is its folder's, which is also its controller's name in
	// --controllers.
	name string
	// kind is the kind of its CRD; valueKey, the values' key that switches
	// it, is the kind with a lower-case first letter (backupJob).
	kind, valueKey string
	// crds go to crds/, objects to templates/.
	crds, objects []*unstructured.Unstructured
}

// namespacedOverlay is what deploy/overlays/namespaced changes from the base
// and its components: the chart does the same when watchNamespace is set.
type namespacedOverlay struct {
	// watched is the namespace it watches, written into added.
	watched string
	// components are the names of the components it installs: with
	// watchNamespace, only these may be enabled.
	components []string
	// added are the objects it adds but the watched Namespace (which holds
	// people's objects: not the chart's to delete on uninstall).
	added []*unstructured.Unstructured
	// removed are the ids of the objects of the base and its components
	// that it leaves out.
	removed map[string]bool
}

// analyse reads deploy/ through kustomize into the parts of the chart.
func analyse(tree *deployTree) (*chart, error) {
	c := &chart{}
	base, err := tree.render("/deploy/base")
	if err != nil {
		return nil, err
	}
	for _, obj := range base {
		if obj.GetKind() == "Namespace" {
			if c.namespace != "" {
				return nil, fmt.Errorf("deploy/base has two Namespaces, %s and %s: which is the operator's?", c.namespace, obj.GetName())
			}
			c.namespace = obj.GetName()
			continue
		}
		c.base = append(c.base, obj)
	}
	if c.namespace == "" {
		return nil, fmt.Errorf("deploy/base has no Namespace: the operator's namespace is unknown")
	}
	if err := c.readDeployment(); err != nil {
		return nil, err
	}
	if c.components, c.options, err = readComponents(tree); err != nil {
		return nil, err
	}
	if c.namespaced, err = readNamespacedOverlay(tree, base, c.components); err != nil {
		return nil, err
	}
	return c, nil
}

// deployment returns the operator's Deployment in base.
func (c *chart) deployment() (*unstructured.Unstructured, error) {
	for _, obj := range c.base {
		if obj.GetKind() == "Deployment" && obj.GetNamespace() == c.namespace {
			return obj, nil
		}
	}
	return nil, fmt.Errorf("deploy/base has no Deployment in %s: where does the operator run?", c.namespace)
}

// readDeployment reads the values' defaults from the operator's Deployment.
func (c *chart) readDeployment() error {
	d, err := c.deployment()
	if err != nil {
		return err
	}
	replicas, found, err := unstructured.NestedInt64(d.Object, "spec", "replicas")
	if err != nil || !found {
		return fmt.Errorf("the Deployment %s names no spec.replicas (%v)", d.GetName(), err)
	}
	c.replicas = replicas
	container, err := operatorContainerOf(d)
	if err != nil {
		return err
	}
	image, _ := container["image"].(string)
	at := strings.LastIndex(image, ":")
	if at < 0 || strings.Contains(image[at:], "/") || strings.Contains(image, "@") {
		return fmt.Errorf("the operator's image %q is not REPOSITORY:TAG", image)
	}
	c.imageRepository, c.imageTag = image[:at], image[at+1:]
	c.resources, _ = container["resources"].(map[string]any)
	if c.resources == nil {
		return fmt.Errorf("the operator's container has no resources: the chart has no default to give")
	}
	args, _ := container["args"].([]any)
	if len(args) == 0 || args[0] != allNamespaces {
		return fmt.Errorf("the operator's first argument is not %s: the chart's watchNamespace would replace another one", allNamespaces)
	}
	return nil
}

// operatorContainerOf returns the operator's container of a Deployment,
// not a copy: changing it changes d.
func operatorContainerOf(d *unstructured.Unstructured) (map[string]any, error) {
	field, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "template", "spec", "containers")
	containers, _ := field.([]any)
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == operatorContainer {
			return m, nil
		}
	}
	return nil, fmt.Errorf("the Deployment %s has no container %q", d.GetName(), operatorContainer)
}

// readComponents renders each component of deploy/components alone: those
// of a kind, with its CRD, and the options, which have no CRD and serve no
// kind (deploy/components/monitoring), switched by their folder's name.
func readComponents(tree *deployTree) (components, options []component, err error) {
	kustomizations, err := tree.fs.Glob("/deploy/components/*/kustomization.yaml")
	if err != nil {
		return nil, nil, fmt.Errorf("list the components: %w", err)
	}
	sort.Strings(kustomizations)
	for _, k := range kustomizations {
		name := path.Base(path.Dir(k))
		objs, err := tree.renderComponents("component-"+name, nil, []string{"../../deploy/components/" + name})
		if err != nil {
			return nil, nil, fmt.Errorf("component %s: %w", name, err)
		}
		c := component{name: name}
		for _, obj := range objs {
			if obj.GetKind() == "CustomResourceDefinition" {
				c.crds = append(c.crds, obj)
				continue
			}
			c.objects = append(c.objects, obj)
		}
		if len(c.crds) == 0 {
			if !optionName.MatchString(name) {
				return nil, nil, fmt.Errorf("component %s has no CRD, and its name is no values key for its switch", name)
			}
			c.valueKey = name
			options = append(options, c)
			continue
		}
		if len(c.crds) != 1 {
			return nil, nil, fmt.Errorf("component %s has %d CRDs, not one: which kind names its switch?", name, len(c.crds))
		}
		kind, _, _ := unstructured.NestedString(c.crds[0].Object, "spec", "names", "kind")
		if kind == "" {
			return nil, nil, fmt.Errorf("component %s: its CRD names no kind", name)
		}
		c.kind, c.valueKey = kind, strings.ToLower(kind[:1])+kind[1:]
		components = append(components, c)
	}
	if len(components) == 0 {
		return nil, nil, fmt.Errorf("deploy/components has no component of a kind")
	}
	return components, options, nil
}

// optionName is what an option's folder may be called: its name is its
// values key.
var optionName = regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)

// readNamespacedOverlay compares deploy/overlays/namespaced with the base
// and the components it lists. Besides adding objects and leaving some out,
// it may change only the operator's first argument, to --namespace=NAME:
// anything else is a change the chart does not know how to make.
func readNamespacedOverlay(tree *deployTree, base []*unstructured.Unstructured, components []component) (namespacedOverlay, error) {
	const dir = "/deploy/overlays/namespaced"
	o := namespacedOverlay{removed: map[string]bool{}}
	overlay, err := tree.render(dir)
	if err != nil {
		return o, err
	}
	listed, err := tree.kustomizationComponents(dir)
	if err != nil {
		return o, err
	}
	plain := map[string]*unstructured.Unstructured{}
	for _, obj := range base {
		plain[id(obj)] = obj
	}
	for _, name := range listed {
		name = path.Base(name)
		found := false
		for _, c := range components {
			if c.name != name {
				continue
			}
			found = true
			for _, obj := range append(append([]*unstructured.Unstructured(nil), c.crds...), c.objects...) {
				plain[id(obj)] = obj
			}
		}
		if !found {
			return o, fmt.Errorf("%s lists component %s, which deploy/components does not have", dir, name)
		}
		o.components = append(o.components, name)
	}
	sort.Strings(o.components)

	seen := map[string]bool{}
	scope := ""
	for _, obj := range overlay {
		seen[id(obj)] = true
		before, ok := plain[id(obj)]
		switch {
		case !ok && obj.GetKind() == "Namespace":
			o.watched = obj.GetName()
		case !ok:
			o.added = append(o.added, obj)
		case obj.GetKind() == "Deployment":
			if scope, err = readScope(before, obj); err != nil {
				return o, err
			}
		case !equality.Semantic.DeepEqual(before.Object, obj.Object):
			return o, fmt.Errorf("%s changes %s, which the chart cannot do: teach hack/gen-chart", dir, id(obj))
		}
	}
	for key, obj := range plain {
		if seen[key] {
			continue
		}
		// Helm installs crds/ whatever the values: no switch can take one away.
		if obj.GetKind() == "CustomResourceDefinition" {
			return o, fmt.Errorf("%s leaves out %s, which the chart cannot do: its CRDs are in crds/", dir, key)
		}
		o.removed[key] = true
	}
	if o.watched == "" || o.watched != scope {
		return o, fmt.Errorf("%s makes Namespace %q but its operator watches %q", dir, o.watched, scope)
	}
	for _, obj := range o.added {
		if ns := obj.GetNamespace(); ns != "" && ns != o.watched && ns != plainNamespace(base) {
			return o, fmt.Errorf("%s adds %s in a namespace neither the watched one nor the operator's", dir, id(obj))
		}
	}
	return o, nil
}

// readScope checks that the overlay's Deployment is the base's but for
// its first argument, --namespace=NAME, and returns NAME.
func readScope(before, after *unstructured.Unstructured) (string, error) {
	after = after.DeepCopy()
	container, err := operatorContainerOf(after)
	if err != nil {
		return "", err
	}
	args, _ := container["args"].([]any)
	first := ""
	if len(args) > 0 {
		first, _ = args[0].(string)
	}
	watched, ok := strings.CutPrefix(first, "--namespace=")
	if !ok {
		return "", fmt.Errorf("the namespaced overlay's operator does not start with --namespace=NAME but %q", first)
	}
	args[0] = allNamespaces
	if !equality.Semantic.DeepEqual(before.Object, after.Object) {
		return "", fmt.Errorf("the namespaced overlay changes the operator's Deployment beyond its first argument, which the chart cannot do: teach hack/gen-chart (%s)", cmp.Diff(before.Object, after.Object))
	}
	return watched, nil
}

// plainNamespace is the operator's namespace: that of base's Namespace.
func plainNamespace(base []*unstructured.Unstructured) string {
	for _, obj := range base {
		if obj.GetKind() == "Namespace" {
			return obj.GetName()
		}
	}
	return ""
}
