package website

import (
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	websitev1 "example.com/platform-operator/api/v1"
)

// DesiredIngress is the desired Ingress of w, or nil when w asks for none. It routes
// spec.ingress.path on spec.ingress.host to w's Service, over TLS when
// spec.ingress.tlsSecretName is set.
func DesiredIngress(w *websitev1.Website) *networkingv1ac.IngressApplyConfiguration {
	spec := w.Spec.Ingress
	if spec == nil {
		return nil
	}
	path := spec.Path
	if path == "" {
		path = "/"
	}
	rule := networkingv1ac.IngressRule().
		WithHTTP(networkingv1ac.HTTPIngressRuleValue().
			WithPaths(networkingv1ac.HTTPIngressPath().
				WithPath(path).
				WithPathType(networkingv1.PathTypePrefix).
				WithBackend(networkingv1ac.IngressBackend().
					WithService(networkingv1ac.IngressServiceBackend().
						WithName(w.Name).
						WithPort(networkingv1ac.ServiceBackendPort().WithName(PortName))))))
	if spec.Host != "" {
		rule.WithHost(spec.Host)
	}
	ingressSpec := networkingv1ac.IngressSpec().WithRules(rule)
	if spec.ClassName != "" {
		ingressSpec.WithIngressClassName(spec.ClassName)
	}
	if spec.TLSSecretName != "" {
		ingressSpec.WithTLS(networkingv1ac.IngressTLS().
			WithHosts(spec.Host).
			WithSecretName(spec.TLSSecretName))
	}
	return networkingv1ac.Ingress(w.Name, w.Namespace).
		WithLabels(Labels(w)).
		WithOwnerReferences(ownerReference(w)).
		WithSpec(ingressSpec)
}

// IngressURL is the external URL of w's Ingress, or "" when w has no Ingress
// host.
func IngressURL(w *websitev1.Website) string {
	spec := w.Spec.Ingress
	if spec == nil || spec.Host == "" {
		return ""
	}
	scheme := "http"
	if spec.TLSSecretName != "" {
		scheme = "https"
	}
	path := spec.Path
	if path == "" || path == "/" {
		path = ""
	}
	return scheme + "://" + spec.Host + path
}
