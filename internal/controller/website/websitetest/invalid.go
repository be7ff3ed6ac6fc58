package websitetest

import "strings"

// InvalidWebsite is a Website spec, as YAML, that the API server must
// refuse, and the field its refusal must name.
type InvalidWebsite struct {
	Name  string
	Spec  string // YAML of the Website below metadata, for example "spec: {image: x}"
	Field string
}

// InvalidWebsites are the bad and hostile inputs that the CRD's schema and
// rules reject: the API validation tests send them to envtest, the
// reliability tests to the local cluster.
var InvalidWebsites = []InvalidWebsite{
	{"port 0", "spec: {image: nginx:1.25, port: 0}", "spec.port"},
	{"port 65536", "spec: {image: nginx:1.25, port: 65536}", "spec.port"},
	{"port as a string", `spec: {image: nginx:1.25, port: "80"}`, "spec.port"},
	{"missing image", "spec: {port: 80}", "spec.image"},
	{"empty image", `spec: {image: ""}`, "spec.image"},
	{"image with spaces", `spec: {image: "nginx 1.25"}`, "spec.image"},
	{"image with a newline", `spec: {image: "nginx:1.25\nprivileged: true"}`, "spec.image"},
	{"image with YAML inside", `spec: {image: "nginx:1.25\n  securityContext:\n    privileged: true"}`, "spec.image"},
	{"image with quotes", `spec: {image: "nginx\"1.25"}`, "spec.image"},
	{"image of 10 KB", "spec: {image: " + strings.Repeat("a", 10*1024) + "}", "spec.image"},
	{"negative replicas", "spec: {image: nginx:1.25, replicas: -1}", "spec.replicas"},
	{"huge replicas", "spec: {image: nginx:1.25, replicas: 1000000}", "spec.replicas"},
	{"readiness path without a slash", "spec: {image: nginx:1.25, readinessPath: healthz}", "spec.readinessPath"},
	{"run as root", "spec: {image: nginx:1.25, runAsUser: 0}", "spec.runAsUser"},
	{"env name with '='", `spec: {image: nginx:1.25, env: [{name: "A=B", value: x}]}`, "spec.env[0].name"},
	{"env with value and valueFrom", `spec: {image: nginx:1.25, env: [{name: A, value: x, valueFrom: {configMapKeyRef: {name: c, key: k}}}]}`, "spec.env[0].valueFrom"},
	{"env from both a ConfigMap and a Secret", `spec: {image: nginx:1.25, env: [{name: A, valueFrom: {configMapKeyRef: {name: c, key: k}, secretKeyRef: {name: s, key: k}}}]}`, "spec.env[0].valueFrom"},
	{"duplicate env names", `spec: {image: nginx:1.25, env: [{name: A, value: x}, {name: A, value: y}]}`, "spec.env[1]"},
	{"limit below request", `spec: {image: nginx:1.25, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}`, "spec.resources.limits"},
	{"quantity that is not one", `spec: {image: nginx:1.25, resources: {requests: {cpu: lots}}}`, "spec.resources.requests.cpu"},
	{"ingress host not a DNS name", `spec: {image: nginx:1.25, ingress: {host: "Not_A_Host!"}}`, "spec.ingress.host"},
	{"ingress host with a scheme", `spec: {image: nginx:1.25, ingress: {host: "https://www.example.com"}}`, "spec.ingress.host"},
	{"ingress path without a slash", `spec: {image: nginx:1.25, ingress: {host: www.example.com, path: docs}}`, "spec.ingress.path"},
	{"tlsSecretName without a host", `spec: {image: nginx:1.25, ingress: {tlsSecretName: www-tls}}`, "spec.ingress.tlsSecretName"},
	{"ingress class not a name", `spec: {image: nginx:1.25, ingress: {className: "Big Class"}}`, "spec.ingress.className"},
	{"no spec", "", "spec"},
}
