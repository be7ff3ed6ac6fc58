package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const repoRoot = "../.."

// The switches are named after the kinds, not the components' folders.
func TestSwitchesAreNamedAfterTheKinds(t *testing.T) {
	g := NewWithT(t)
	tree, err := readDeploy(repoRoot)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := analyse(tree)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(valueKeys(c.components)).To(Equal([]string{"backupJob", "postgresCluster", "tenant", "website"}))
	g.Expect(c.namespace).To(Equal("platform-operator-system"))
	g.Expect(c.namespaced.watched).To(Equal("websites"))
	g.Expect(c.namespaced.components).To(Equal([]string{"website"}))
	g.Expect(c.namespaced.removed).To(HaveKey("ClusterRoleBinding//platform-operator-website"))
	// A component without a CRD serves no kind: an option, named after
	// its folder.
	g.Expect(valueKeys(c.options)).To(Equal([]string{"monitoring"}))
}

// Prometheus' templates in deploy/ ({{ $labels.name }}) reach the rendered
// chart as they are: helm must not read them.
func TestTemplatesOfDeployAreLiteralInTheChart(t *testing.T) {
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
		"metadata": map[string]any{"name": "r", "namespace": "platform-operator-system"},
		"spec":     map[string]any{"summary": "{{ $labels.name }} is down"},
	}}
	text, err := templateObject(obj, templateOptions{namespace: "platform-operator-system"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(text).To(ContainSubstring("summary: '{{`{{`}} $labels.name }} is down'"))
}

// An overlay change that the chart cannot make stops the generation, rather
// than giving a chart that differs from deploy/.
func TestUnknownOverlayChangeStopsTheGeneration(t *testing.T) {
	g := NewWithT(t)
	tree, err := readDeploy(repoRoot)
	g.Expect(err).NotTo(HaveOccurred())
	const path = "/deploy/overlays/namespaced/kustomization.yaml"
	k, err := tree.fs.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	changed := strings.Replace(string(k), "patches:\n", `patches:
- patch: |-
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: platform-operator, namespace: platform-operator-system}
    spec: {replicas: 1}
`, 1)
	g.Expect(changed).NotTo(Equal(string(k)))
	g.Expect(tree.fs.WriteFile(path, []byte(changed))).To(Succeed())
	_, err = analyse(tree)
	g.Expect(err).To(MatchError(ContainSubstring("beyond its first argument")))
}

// The operator's namespace becomes the release's where it is a whole
// word, also inside the admission policies' expressions.
func TestNamespaceBecomesTheReleases(t *testing.T) {
	g := NewWithT(t)
	in := "namespace: ns\nexpression: request.userInfo.username == 'system:serviceaccount:ns:op' && request.namespace == 'ns'\nname: ns-other\nname: other-ns\n"
	g.Expect(replaceNamespace(in, "ns")).To(Equal("namespace: {{ .Release.Namespace }}\n" +
		"expression: request.userInfo.username == 'system:serviceaccount:{{ .Release.Namespace }}:op' && request.namespace == '{{ .Release.Namespace }}'\n" +
		"name: ns-other\nname: other-ns\n"))
}

// The Deployment's values become expressions; the rest stays deploy/'s.
func TestDeploymentTemplate(t *testing.T) {
	g := NewWithT(t)
	tree, err := readDeploy(repoRoot)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := analyse(tree)
	g.Expect(err).NotTo(HaveOccurred())
	d, err := c.deployment()
	g.Expect(err).NotTo(HaveOccurred())
	templated, err := templateDeployment(d)
	g.Expect(err).NotTo(HaveOccurred())
	text, err := templateObject(templated, templateOptions{namespace: c.namespace})
	g.Expect(err).NotTo(HaveOccurred())
	for _, want := range []string{
		"  replicas: {{ .Values.replicas }}\n",
		"        image: {{ include \"platform-operator.image\" . | quote }}\n",
		"          value: {{ include \"platform-operator.image\" . | quote }}\n",
		"        - {{ include \"platform-operator.scopeFlag\" . | quote }}\n",
		"        {{- with include \"platform-operator.controllersFlag\" . }}\n        - {{ . | quote }}\n        {{- end }}\n",
		"        resources:\n        {{- toYaml .Values.resources | nindent 10 }}\n",
		"  namespace: {{ .Release.Namespace }}\n",
		"    app.kubernetes.io/component: controller\n",
	} {
		g.Expect(text).To(ContainSubstring(want))
	}
	g.Expect(text).NotTo(ContainSubstring(placeholderMark))
}
