package website

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	websitev1 "example.com/platform-operator/api/v1"
)

// ServicePort is the port of every Website's Service, so that the site is
// reached at http://NAME.NAMESPACE.svc whatever port its container uses.
const ServicePort int32 = 80

// DesiredService is the desired ClusterIP Service of w: named like w, forwarding
// port 80 to the container's port.
func DesiredService(w *websitev1.Website) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(w.Name, w.Namespace).
		WithLabels(Labels(w)).
		WithOwnerReferences(ownerReference(w)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(SelectorLabels(w)).
			WithPorts(corev1ac.ServicePort().
				WithName(PortName).
				WithProtocol(corev1.ProtocolTCP).
				WithPort(ServicePort).
				WithTargetPort(intstr.FromString(PortName))))
}

// ServiceURL is the in-cluster URL of w's Service.
func ServiceURL(w *websitev1.Website, clusterDomain string) string {
	return fmt.Sprintf("http://%s.%s.svc.%s", w.Name, w.Namespace, clusterDomain)
}
