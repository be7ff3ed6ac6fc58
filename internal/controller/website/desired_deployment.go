package website

import (
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	websitev1 "example.com/platform-operator/api/v1"
)

const (
	// ContainerName is the name of the Website's container, as in the
	// tutorial's Deployment.
	ContainerName = "website"

	// PortName names the container port and the Service's port, so that
	// probes and the Service follow spec.port without repeating it.
	PortName = "http"

	// DefaultRunAsUser is the user ID the container runs as when
	// spec.runAsUser is not set: the nginx user of the official nginx
	// images. See podSecurityContext for why the pod never runs as root.
	DefaultRunAsUser int64 = 101

	// revisionHistoryLimit keeps three old ReplicaSets per Website for
	// `kubectl rollout undo`, instead of the default ten: with thousands of
	// Websites the difference is tens of thousands of objects in etcd.
	revisionHistoryLimit int32 = 3

	// unprivilegedPortSysctl lets a non-root process bind ports below 1024
	// inside the pod's own network namespace. It is a namespaced sysctl that
	// the Pod Security Standards allow at every level.
	unprivilegedPortSysctl = "net.ipv4.ip_unprivileged_port_start"
)

// writableDirs are the only writable paths of the container, each an
// emptyDir, because its root file system is read-only. nginx needs
// /var/cache/nginx for its temporary files and /var/run for its pid file;
// /tmp serves every other program.
var writableDirs = []struct{ volume, path string }{
	{"tmp", "/tmp"},
	{"nginx-cache", "/var/cache/nginx"},
	{"run", "/var/run"},
}

// DesiredDeployment is the desired Deployment of w: named like w, in its namespace,
// running spec.replicas pods of spec.image that listen on spec.port.
func DesiredDeployment(w *websitev1.Website) *appsv1ac.DeploymentApplyConfiguration {
	labels := Labels(w)
	replicas := int32(1)
	if w.Spec.Replicas != nil {
		replicas = *w.Spec.Replicas
	}

	return appsv1ac.Deployment(w.Name, w.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(w)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithRevisionHistoryLimit(revisionHistoryLimit).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(SelectorLabels(w))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(podSpec(w))))
}

// DesiredAdoptedDeployment is DesiredDeployment for a Deployment adopted
// from the tutorial's operator. A Deployment's selector cannot change, so it
// keeps the tutorial's, app: NAME, and its pods carry that label next to
// the operator's: the Website's Service, which selects the operator's
// labels, routes to them once they are rolled out.
func DesiredAdoptedDeployment(w *websitev1.Website) *appsv1ac.DeploymentApplyConfiguration {
	d := DesiredDeployment(w)
	d.Spec.WithSelector(metav1ac.LabelSelector().WithMatchLabels(tutorialSelector(w)))
	d.Spec.Template.WithLabels(tutorialSelector(w))
	return d
}

func podSpec(w *websitev1.Website) *corev1ac.PodSpecApplyConfiguration {
	spec := corev1ac.PodSpec().
		WithContainers(container(w)).
		WithSecurityContext(podSecurityContext(w)).
		// The site needs no credentials for the Kubernetes API.
		WithAutomountServiceAccountToken(false).
		// Service links put variables for every Service of the namespace into
		// the container: thousands with thousands of Websites.
		WithEnableServiceLinks(false)
	for _, dir := range writableDirs {
		spec.WithVolumes(corev1ac.Volume().
			WithName(dir.volume).
			WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	return spec
}

func container(w *websitev1.Website) *corev1ac.ContainerApplyConfiguration {
	c := corev1ac.Container().
		WithName(ContainerName).
		WithImage(w.Spec.Image).
		WithPorts(corev1ac.ContainerPort().
			WithName(PortName).
			WithContainerPort(w.Spec.Port).
			WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(readinessProbe(w)).
		WithSecurityContext(containerSecurityContext())
	for _, env := range w.Spec.Env {
		c.WithEnv(envVar(env))
	}
	if r := w.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		resources := corev1ac.ResourceRequirements()
		if len(r.Requests) > 0 {
			resources.WithRequests(r.Requests.DeepCopy())
		}
		if len(r.Limits) > 0 {
			resources.WithLimits(r.Limits.DeepCopy())
		}
		c.WithResources(resources)
	}
	for _, dir := range writableDirs {
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(dir.volume).WithMountPath(dir.path))
	}
	return c
}

// readinessProbe sends traffic to a pod only once it answers: on
// spec.readinessPath over HTTP when set, else when its port accepts TCP
// connections, which is better than the default of "as soon as the process
// started".
func readinessProbe(w *websitev1.Website) *corev1ac.ProbeApplyConfiguration {
	port := intstr.FromString(PortName)
	if w.Spec.ReadinessPath != "" {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().
			WithPath(w.Spec.ReadinessPath).
			WithPort(port))
	}
	return corev1ac.Probe().WithTCPSocket(corev1ac.TCPSocketAction().WithPort(port))
}

func envVar(env websitev1.EnvVar) *corev1ac.EnvVarApplyConfiguration {
	v := corev1ac.EnvVar().WithName(env.Name)
	switch {
	case env.ValueFrom == nil:
		v.WithValue(env.Value)
	case env.ValueFrom.ConfigMapKeyRef != nil:
		ref := env.ValueFrom.ConfigMapKeyRef
		selector := corev1ac.ConfigMapKeySelector().WithName(ref.Name).WithKey(ref.Key)
		if ref.Optional != nil {
			selector.WithOptional(*ref.Optional)
		}
		v.WithValueFrom(corev1ac.EnvVarSource().WithConfigMapKeyRef(selector))
	case env.ValueFrom.SecretKeyRef != nil:
		ref := env.ValueFrom.SecretKeyRef
		selector := corev1ac.SecretKeySelector().WithName(ref.Name).WithKey(ref.Key)
		if ref.Optional != nil {
			selector.WithOptional(*ref.Optional)
		}
		v.WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(selector))
	}
	return v
}

// podSecurityContext meets the restricted Pod Security Standard: the pod
// never runs as root. Images such as nginx:1.25 that start as root instead
// run as spec.runAsUser (101, nginx's own user, by default), which works
// because their files are world-readable and the only paths they write are
// the emptyDirs of writableDirs. Ports below 1024, such as nginx's 80, are
// opened to non-root processes by a namespaced sysctl rather than by the
// NET_BIND_SERVICE capability, which a non-root process would not hold.
func podSecurityContext(w *websitev1.Website) *corev1ac.PodSecurityContextApplyConfiguration {
	user := DefaultRunAsUser
	// The schema allows only positive IDs; the builder does not rely on it
	// to keep root out.
	if w.Spec.RunAsUser != nil && *w.Spec.RunAsUser > 0 {
		user = *w.Spec.RunAsUser
	}
	sc := corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(user).
		WithRunAsGroup(user).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
	if w.Spec.Port < 1024 {
		sc.WithSysctls(corev1ac.Sysctl().WithName(unprivilegedPortSysctl).WithValue("0"))
	}
	return sc
}

// containerSecurityContext drops every capability, forbids gaining new ones
// and makes the root file system read-only.
func containerSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithPrivileged(false).
		WithReadOnlyRootFilesystem(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop(corev1.Capability("ALL")))
}
