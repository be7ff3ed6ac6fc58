package main

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/platform"
)

// A field that the values set is first given a placeholder value,
// '@@NAME@@' once marshalled, and the marshalled YAML then has the
// placeholder replaced by a template expression. So the YAML around it stays
// what kustomize rendered, and no value is ever pasted into YAML text: each
// expression quotes what it writes, or writes YAML with toYaml.
const placeholderMark = "@@"

func placeholder(name string) string { return placeholderMark + name + placeholderMark }

// expressions replace the placeholders that stand for a scalar.
var expressions = map[string]string{
	"chart":          `{{ include "platform-operator.chart" . | quote }}`,
	"instance":       `{{ .Release.Name | quote }}`,
	"service":        `{{ .Release.Service | quote }}`,
	"replicas":       `{{ .Values.replicas }}`,
	"image":          `{{ include "platform-operator.image" . | quote }}`,
	"scope":          `{{ include "platform-operator.scopeFlag" . | quote }}`,
	"watchNamespace": `{{ .Values.watchNamespace | quote }}`,
}

// lineExpressions replace a whole line that holds a placeholder: a value
// that is a map, or a list item that may be absent. They get the line's
// indentation and what comes before the placeholder ("resources: ", "- ").
var lineExpressions = map[string]func(indent, key string) string{
	"resources": func(indent, key string) string {
		return fmt.Sprintf("%s%s\n%s{{- toYaml .Values.resources | nindent %d }}", indent, strings.TrimSpace(key), indent, len(indent)+2)
	},
	"controllers": func(indent, key string) string {
		return fmt.Sprintf("%s{{- with include \"platform-operator.controllersFlag\" . }}\n%s%s{{ . | quote }}\n%s{{- end }}", indent, indent, key, indent)
	},
}

// helmLabels are the labels Helm's conventions put on every object of a
// chart, besides deploy/'s own app.kubernetes.io/name. They are not put on
// pod templates or selectors: a selector cannot change, and a new chart
// version should not restart the operator.
var helmLabels = map[string]string{
	"helm.sh/chart":                placeholder("chart"),
	"app.kubernetes.io/instance":   placeholder("instance"),
	"app.kubernetes.io/managed-by": placeholder("service"),
}

// templateOptions say how one object becomes a template.
type templateOptions struct {
	// namespace, the operator's in deploy/, becomes the release's.
	namespace string
	// watched, the namespaced overlay's, becomes watchNamespace's value.
	watched string
	// condition, when set, wraps the object in {{- if condition }}.
	condition string
}

// templateObject returns the template of one object: its YAML with the
// helm labels, the placeholders replaced by expressions and deploy/'s
// namespaces by the chart's.
func templateObject(obj *unstructured.Unstructured, opts templateOptions) (string, error) {
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range helmLabels {
		labels[k] = v
	}
	obj.SetLabels(labels)
	if opts.watched != "" && obj.GetNamespace() == opts.watched {
		obj.SetNamespace(placeholder("watchNamespace"))
	}
	data, err := yaml.Marshal(obj.Object)
	if err != nil {
		return "", fmt.Errorf("marshal %s: %w", id(obj), err)
	}
	text := string(data)
	// Text of deploy/ that looks like a template (a PrometheusRule's
	// {{ $labels.name }}, for Prometheus) is written as helm writes a
	// literal {{, before the chart's own expressions go in.
	text = strings.ReplaceAll(text, "{{", "{{`{{`}}")
	text = replaceNamespace(text, opts.namespace)
	for name, expr := range expressions {
		text = strings.ReplaceAll(text, "'"+placeholder(name)+"'", expr)
	}
	text, err = replaceLines(text)
	if err != nil {
		return "", fmt.Errorf("%s: %w", id(obj), err)
	}
	if strings.Contains(text, placeholderMark) {
		return "", fmt.Errorf("%s: a placeholder was left in its template:\n%s", id(obj), text)
	}
	if opts.condition != "" {
		text = "{{- if " + opts.condition + " }}\n" + text + "{{- end }}\n"
	}
	return text, nil
}

// replaceNamespace writes the release's namespace for every mention of
// namespace as a whole word: in metadata, in subjects, and in the admission
// policies' expressions that name the operator's ServiceAccount and its
// Lease's namespace. A namespace name is a DNS label, which needs no
// quoting wherever the word stood.
func replaceNamespace(text, namespace string) string {
	word := regexp.MustCompile(`(^|[^a-z0-9.-])` + regexp.QuoteMeta(namespace) + `($|[^a-z0-9.-])`)
	// Twice: two mentions separated by one character share it.
	for range 2 {
		text = word.ReplaceAllString(text, "${1}{{ .Release.Namespace }}${2}")
	}
	return text
}

var placeholderLine = regexp.MustCompile(`^(\s*)(.*)'` + placeholderMark + `(\w+)` + placeholderMark + `'$`)

// replaceLines replaces the lines that hold a line placeholder.
func replaceLines(text string) (string, error) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		m := placeholderLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		expr, ok := lineExpressions[m[3]]
		if !ok {
			return "", fmt.Errorf("no expression for the placeholder %s", m[3])
		}
		lines[i] = expr(m[1], m[2])
	}
	return strings.Join(lines, "\n"), nil
}

// templateDeployment gives the operator's Deployment the placeholders of
// the values: replicas, the image (also in OPERATOR_IMAGE, which
// deploy/base's replacement sets from it), resources, its scope (first
// argument) and a last argument --controllers when a kind is switched off.
func templateDeployment(d *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	d = d.DeepCopy()
	if err := unstructured.SetNestedField(d.Object, placeholder("replicas"), "spec", "replicas"); err != nil {
		return nil, err
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	found := false
	for _, c := range containers {
		m, ok := c.(map[string]any)
		if !ok || m["name"] != operatorContainer {
			continue
		}
		found = true
		m["image"] = placeholder("image")
		m["resources"] = placeholder("resources")
		args, _ := m["args"].([]any)
		args[0] = placeholder("scope")
		m["args"] = append(args, placeholder("controllers"))
		env, _ := m["env"].([]any)
		for _, e := range env {
			if v, ok := e.(map[string]any); ok && v["name"] == platform.ImageEnv {
				v["value"] = placeholder("image")
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("the Deployment %s has no container %q", d.GetName(), operatorContainer)
	}
	if err := unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		return nil, err
	}
	return d, nil
}
