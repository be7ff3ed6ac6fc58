package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdoptAnnotation on a Website, with the value AdoptFromTutorial, lets the
// operator take over what the tutorial's kopf operator made for it: its
// Deployment, without downtime, and the framework's finalizer and
// annotations on the Website, which it removes once the Deployment is owned.
// Without it (or the operator's --adopt-tutorial flag), such a Deployment is
// a conflict that the operator leaves untouched.
const AdoptAnnotation = "example.com/adopt"

// AdoptFromTutorial is the value of AdoptAnnotation, and of
// status.adoptedFrom, for what the tutorial's operator made.
const AdoptFromTutorial = "tutorial"

// WebsiteSpec is the desired state of a Website: which image serves it, on
// which port, how many copies run, and how it is reached.
type WebsiteSpec struct {
	// image is the container image that serves the site, as a registry
	// reference such as nginx:1.25 or registry.example.com/team/site@sha256:...
	// It may not contain white space or quotes.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	Image string `json:"image"`

	// port is the TCP port the container listens on. The Website's Service
	// forwards its port 80 to it. Defaults to 80.
	// +optional
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// replicas is the number of pods that serve the site. 0 stops the site
	// without deleting it. Defaults to 1. The scale subresource sets it, so
	// `kubectl scale website/NAME --replicas N` works.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas *int32 `json:"replicas,omitempty"`

	// env lists environment variables for the container, each with a value
	// or taken from a key of a ConfigMap or Secret. Names must be unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []EnvVar `json:"env,omitempty"`

	// resources are the compute resources of the container: requests are
	// reserved by the scheduler, limits are enforced at run time.
	// +optional
	Resources *ResourceRequirements `json:"resources,omitempty"`

	// readinessPath is an HTTP path, such as /healthz, that answers 2xx or 3xx
	// when a pod is ready to serve. When set, a pod receives traffic only after
	// it answers there; when empty, once its port accepts TCP connections.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9/._~%!$&'()*+,;=:@?-]*$`
	ReadinessPath string `json:"readinessPath,omitempty"`

	// runAsUser is the non-root user ID the container runs as. Defaults to
	// 101, the nginx user of the official nginx images, so that they run
	// under the restricted Pod Security Standard.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// ingress, when set, makes the site reachable from outside the cluster
	// through an Ingress named like the Website.
	// +optional
	Ingress *WebsiteIngress `json:"ingress,omitempty"`
}

// EnvVar is an environment variable of the Website's container.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.value) && has(self.valueFrom))",message="set value or valueFrom, not both",fieldPath=".valueFrom",reason=FieldValueForbidden
type EnvVar struct {
	// name of the variable: letters, digits, '_', '-' and '.', not starting
	// with a digit.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[A-Za-z_.-][A-Za-z0-9_.-]*$`
	Name string `json:"name"`

	// value of the variable. $(OTHER) references to earlier variables are
	// expanded, as in a Pod.
	// +optional
	// +kubebuilder:validation:MaxLength=32768
	Value string `json:"value,omitempty"`

	// valueFrom takes the value from a key of a ConfigMap or Secret in the
	// Website's namespace.
	// +optional
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource names where an environment variable's value comes from.
//
// +kubebuilder:validation:XValidation:rule="has(self.configMapKeyRef) != has(self.secretKeyRef)",message="set exactly one of configMapKeyRef and secretKeyRef"
type EnvVarSource struct {
	// configMapKeyRef selects a key of a ConfigMap.
	// +optional
	ConfigMapKeyRef *KeySelector `json:"configMapKeyRef,omitempty"`

	// secretKeyRef selects a key of a Secret. The operator never reads the
	// Secret: the kubelet does, when it starts the pod.
	// +optional
	SecretKeyRef *KeySelector `json:"secretKeyRef,omitempty"`
}

// KeySelector selects a key of a ConfigMap or Secret.
type KeySelector struct {
	// name of the ConfigMap or Secret, in the Website's namespace.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key within it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`

	// optional, when true, starts the pod even if the object or key is
	// missing; the variable is then unset.
	// +optional
	Optional *bool `json:"optional,omitempty"`
}

// ResourceRequirements are the requests and limits of the Website's
// container.
//
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || self.requests.all(r, !(r in self.limits) || quantity(string(self.requests[r])).compareTo(quantity(string(self.limits[r]))) <= 0)",message="each limit must be at least its request",fieldPath=".limits",reason=FieldValueInvalid
type ResourceRequirements struct {
	// requests is the minimum amount of each resource the container needs,
	// for example cpu: 100m, memory: 64Mi.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	Requests corev1.ResourceList `json:"requests,omitempty"`

	// limits is the maximum amount of each resource the container may use.
	// Each limit must be at least its request.
	// +optional
	// +kubebuilder:validation:MaxProperties=6
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// WebsiteIngress describes how the site is exposed outside the cluster.
//
// +kubebuilder:validation:XValidation:rule="!has(self.tlsSecretName) || has(self.host)",message="tlsSecretName requires host: a TLS certificate is issued for a host name",fieldPath=".tlsSecretName",reason=FieldValueRequired
type WebsiteIngress struct {
	// host is the DNS name the site answers to, such as www.example.com, or a
	// wildcard such as *.example.com. When empty, the Ingress matches every
	// host: held, like a host, by one namespace at a time, and refused by an
	// operator run with --allow-catch-all-ingress=false.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Host string `json:"host,omitempty"`

	// path is the URL path prefix routed to the site. Defaults to /.
	// +optional
	// +kubebuilder:default="/"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9/._~%!$&'()*+,;=:@-]*$`
	Path string `json:"path,omitempty"`

	// className is the IngressClass that implements the Ingress. When empty,
	// the cluster's default IngressClass does.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	ClassName string `json:"className,omitempty"`

	// tlsSecretName names a Secret of type kubernetes.io/tls, in the
	// Website's namespace, that holds the certificate for host. When set,
	// the site is served over HTTPS. Requires host.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	TLSSecretName string `json:"tlsSecretName,omitempty"`
}

// WebsiteStatus is what the operator last observed of a Website's children.
type WebsiteStatus struct {
	// observedGeneration is the metadata.generation of the Website that this
	// status describes. When it is lower than metadata.generation, the
	// operator has not yet acted on the latest spec.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions tell whether the Website is Ready, Progressing or Degraded,
	// with a reason and a message for people.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// replicas is the number of pods of the Website's Deployment, of any
	// version.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is the number of those pods that are ready to serve.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// updatedReplicas is the number of pods that run the current spec.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ready is readyReplicas/desired replicas, as kubectl get shows it, for
	// example 2/3.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Ready string `json:"ready,omitempty"`

	// selector is the label selector of the Website's pods, in the string
	// form that the scale subresource and autoscalers use.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Selector string `json:"selector,omitempty"`

	// adoptedFrom is "tutorial" when the Website's Deployment was made by the
	// tutorial's kopf operator and adopted (see the example.com/adopt
	// annotation). Such a Deployment keeps its selector, app: NAME, which
	// cannot change; its pods carry the operator's labels too.
	// +optional
	// +kubebuilder:validation:Enum=tutorial
	AdoptedFrom string `json:"adoptedFrom,omitempty"`

	// url is where the site answers: its Ingress URL when it has an Ingress
	// host, else the in-cluster URL of its Service.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url,omitempty"`
}

// Website is a web site served from a container image. The operator runs it
// as a Deployment, exposes it with a Service of the same name and, when
// spec.ingress is set, an Ingress; status tells whether it is serving.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ws,categories={all,web}
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be at most 63 characters of lower-case letters, digits and '-', starting with a letter and ending with a letter or digit, because the Website's Service takes its name"
type Website struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the Website.
	// +required
	Spec WebsiteSpec `json:"spec"`

	// status is the observed state of the Website, written by the operator.
	// +optional
	Status WebsiteStatus `json:"status,omitempty"`
}

// WebsiteList is a list of Websites.
//
// +kubebuilder:object:root=true
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Website{}, &WebsiteList{})
}
