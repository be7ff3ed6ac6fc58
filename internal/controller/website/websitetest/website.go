// Package websitetest builds Websites for tests with functional options, so
// that each test states only what matters to it, and lists the invalid
// Websites the API must refuse.
package websitetest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	websitev1 "example.com/platform-operator/api/v1"
)

// Option changes a Website under construction.
type Option func(*websitev1.Website)

// Website returns a Website as the API server would store the tutorial's
// website.yaml (image nginx:1.25, port 80, defaults applied), changed by
// opts.
func Website(name, namespace string, opts ...Option) *websitev1.Website {
	replicas := int32(1)
	w := &websitev1.Website{
		TypeMeta: metav1.TypeMeta{APIVersion: websitev1.GroupVersion.String(), Kind: "Website"},
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  namespace,
			UID:        types.UID("uid-" + namespace + "-" + name),
			Generation: 1,
		},
		Spec: websitev1.WebsiteSpec{Image: "nginx:1.25", Port: 80, Replicas: &replicas},
	}
	for _, opt := range opts {
		opt(w)
	}
	return w
}

func WithImage(image string) Option { return func(w *websitev1.Website) { w.Spec.Image = image } }

func WithPort(port int32) Option { return func(w *websitev1.Website) { w.Spec.Port = port } }

func WithReplicas(n int32) Option { return func(w *websitev1.Website) { w.Spec.Replicas = &n } }

func WithGeneration(g int64) Option { return func(w *websitev1.Website) { w.Generation = g } }

func WithReadinessPath(path string) Option {
	return func(w *websitev1.Website) { w.Spec.ReadinessPath = path }
}

func WithRunAsUser(uid int64) Option { return func(w *websitev1.Website) { w.Spec.RunAsUser = &uid } }

func WithEnv(name, value string) Option {
	return func(w *websitev1.Website) {
		w.Spec.Env = append(w.Spec.Env, websitev1.EnvVar{Name: name, Value: value})
	}
}

func WithSecretEnv(name, secret, key string) Option {
	return func(w *websitev1.Website) {
		w.Spec.Env = append(w.Spec.Env, websitev1.EnvVar{Name: name, ValueFrom: &websitev1.EnvVarSource{
			SecretKeyRef: &websitev1.KeySelector{Name: secret, Key: key},
		}})
	}
}

func WithResources(requests, limits map[corev1.ResourceName]string) Option {
	return func(w *websitev1.Website) {
		w.Spec.Resources = &websitev1.ResourceRequirements{Requests: quantities(requests), Limits: quantities(limits)}
	}
}

func WithIngress(host, path, className, tlsSecret string) Option {
	return func(w *websitev1.Website) {
		w.Spec.Ingress = &websitev1.WebsiteIngress{Host: host, Path: path, ClassName: className, TLSSecretName: tlsSecret}
	}
}

func WithConditions(conditions ...metav1.Condition) Option {
	return func(w *websitev1.Website) { w.Status.Conditions = conditions }
}

func quantities(values map[corev1.ResourceName]string) corev1.ResourceList {
	if len(values) == 0 {
		return nil
	}
	list := corev1.ResourceList{}
	for name, value := range values {
		list[name] = resource.MustParse(value)
	}
	return list
}
