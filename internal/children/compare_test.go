package children

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/platform"
)

func verifiedDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{
		Name: "site", Namespace: "default", UID: "uid-1", ResourceVersion: "10", Generation: 2,
		Labels:          map[string]string{"app": "site"},
		Annotations:     map[string]string{ConfigHashAnnotation: "abc"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Website", Name: "site", UID: "owner-1"}},
	}}
}

// desiredMetadata is an intent that sets the labels and annotations of
// verifiedDeployment, with the digest hash.
func desiredMetadata(hash string) *intent {
	return &intent{labels: map[string]string{"app": "site"}, annotations: map[string]string{ConfigHashAnnotation: "abc"}, hash: hash}
}

// A child found equal to its desired state is not compared again until
// what the operator sets in it may have changed: its spec (the generation),
// the metadata it sets, or the desired state. The status changes that a
// Deployment goes through in a rollout, and metadata that others add, do
// not count.
func TestVerifiedChildrenAreComparedAgainOnlyWhenWhatTheOperatorSetsMayHaveChanged(t *testing.T) {
	const desired = "hash-1"
	for _, tc := range []struct {
		name     string
		change   func(client.Object)
		desired  string
		verified bool
	}{
		{name: "an annotation of someone else's added (the Deployment controller's revision)", desired: desired, verified: true, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetAnnotations(map[string]string{ConfigHashAnnotation: "abc", "deployment.kubernetes.io/revision": "1"})
		}},
		{name: "a label of someone else's added", desired: desired, verified: true, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetLabels(map[string]string{"app": "site", "team": "web"})
		}},
		{name: "a label the operator sets changed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetLabels(map[string]string{"app": "other"})
		}},
		{name: "an annotation the operator sets removed, another added", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "1"})
		}},
		{name: "an owner added", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetOwnerReferences(append(o.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "owner-2"}))
		}},
		{name: "nothing", change: func(client.Object) {}, desired: desired, verified: true},
		{name: "a status update", desired: desired, verified: true, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.(*appsv1.Deployment).Status.AvailableReplicas = 1
		}},
		{name: "the desired state", change: func(client.Object) {}, desired: "hash-2"},
		{name: "the spec, by someone else", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetGeneration(3)
		}},
		{name: "a label removed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetLabels(nil)
		}},
		{name: "an annotation changed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetAnnotations(map[string]string{ConfigHashAnnotation: "other"})
		}},
		{name: "the owner reference removed", desired: desired, change: func(o client.Object) {
			o.SetResourceVersion("11")
			o.SetOwnerReferences(nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := newVerifiedCache()
			live := verifiedDeployment()
			cache.remember(live, desiredMetadata(desired))
			tc.change(live)
			if got := cache.matches(live, desiredMetadata(tc.desired)); got != tc.verified {
				t.Errorf("after a change of %s: verified %v, want %v", tc.name, got, tc.verified)
			}
		})
	}
}

// Objects without a generation (a Service) are compared again after any
// write.
func TestChildrenWithoutAGenerationAreComparedAgainAfterAnyWrite(t *testing.T) {
	cache := newVerifiedCache()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "site", UID: "uid-2", ResourceVersion: "5"}}
	cache.remember(svc, desiredMetadata("hash"))
	if !cache.matches(svc, desiredMetadata("hash")) {
		t.Fatal("the Service as remembered is not verified")
	}
	svc.Spec.Ports = []corev1.ServicePort{{Port: 8080}}
	svc.ResourceVersion = "6"
	if cache.matches(svc, desiredMetadata("hash")) {
		t.Error("a Service written since it was verified still is")
	}
}

// Two states of a child agree when every field the operator sets holds the
// same value in both, whatever else differs: what tells an apply that would
// change nothing (the API server rewrites the field on every write) from one
// that restores a hand edit.
func TestStatesAgreeOnlyWhenTheFieldsTheOperatorSetsAreEqual(t *testing.T) {
	desired := appsv1ac.Deployment("site", "default").WithLabels(map[string]string{"app": "site"}).
		WithSpec(appsv1ac.DeploymentSpec().WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("web").WithImage("nginx")))))
	in, err := newIntent(desired)
	if err != nil {
		t.Fatal(err)
	}
	live := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "site", Namespace: "default", ResourceVersion: "10",
				Labels: map[string]string{"app": "site"}, Annotations: in.annotations},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: "mirror.example.com/nginx"}},
			}}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(*appsv1.Deployment)
		agree  bool
	}{
		{name: "the same object", change: func(*appsv1.Deployment) {}, agree: true},
		{name: "others' fields differ", agree: true, change: func(d *appsv1.Deployment) {
			d.ResourceVersion = "11"
			d.Labels["team"] = "web"
			d.Spec.Replicas = ptr.To[int32](3)
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "proxy", Image: "envoy"})
			d.Status.ReadyReplicas = 3
		}},
		{name: "an image the operator sets differs", change: func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = "mirror.example.com/evil"
		}},
		{name: "a label the operator sets differs", change: func(d *appsv1.Deployment) { d.Labels["app"] = "other" }},
		{name: "a label the operator sets is gone", change: func(d *appsv1.Deployment) { delete(d.Labels, "app") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := live()
			tc.change(other)
			agree, err := newDiffer(clientgoscheme.Scheme).agree(in, live(), other)
			if err != nil {
				t.Fatal(err)
			}
			if agree != tc.agree {
				t.Errorf("agree = %t, want %t", agree, tc.agree)
			}
		})
	}
}

// desiredWebDeployment is a Deployment apply configuration shaped like a
// Website's: labels, an owner, a selector, a pod template with a probe,
// security contexts, volumes and mounts.
func desiredWebDeployment() *appsv1ac.DeploymentApplyConfiguration {
	labels := map[string]string{"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": "site"}
	container := corev1ac.Container().WithName("web").WithImage("nginx:1.25").
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(80).WithProtocol(corev1.ProtocolTCP)).
		WithReadinessProbe(corev1ac.Probe().WithTCPSocket(corev1ac.TCPSocketAction().WithPort(intstr.FromString("http")))).
		WithSecurityContext(corev1ac.SecurityContext().WithAllowPrivilegeEscalation(false).WithReadOnlyRootFilesystem(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")))
	pod := corev1ac.PodSpec().WithAutomountServiceAccountToken(false).
		WithSecurityContext(corev1ac.PodSecurityContext().WithRunAsNonRoot(true).WithRunAsUser(101).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault)))
	for _, dir := range []string{"cache", "tmp"} {
		pod.WithVolumes(corev1ac.Volume().WithName(dir).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
		container.WithVolumeMounts(corev1ac.VolumeMount().WithName(dir).WithMountPath("/" + dir))
	}
	return appsv1ac.Deployment("site", "default").WithLabels(labels).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("example.com/v1").WithKind("Website").
			WithName("site").WithUID("owner-1").WithController(true)).
		WithSpec(appsv1ac.DeploymentSpec().WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(pod.WithContainers(container))))
}

// storedWebDeployment is the child that in describes as the API server
// returns it, read from the cache: its identity and creation time,
// defaults, a LimitRange's resources, a status.
func storedWebDeployment(t *testing.T, in *intent) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := in.decodeInto(d); err != nil {
		t.Fatal(err)
	}
	d.TypeMeta = metav1.TypeMeta{} // as read from the cache
	d.UID, d.ResourceVersion, d.Generation = "uid-1", "10", 1
	d.CreationTimestamp = metav1.Now()
	d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
		MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}}
	pod := &d.Spec.Template.Spec
	pod.RestartPolicy, pod.DNSPolicy, pod.SchedulerName = corev1.RestartPolicyAlways, corev1.DNSClusterFirst, "default-scheduler"
	pod.TerminationGracePeriodSeconds = ptr.To[int64](30)
	pod.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	pod.Containers[0].TerminationMessagePath = "/dev/termination-log"
	pod.Containers[0].ReadinessProbe.PeriodSeconds = 10
	pod.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}} // a LimitRange's default
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	return d
}

// A child as the API server returns it holds more than the operator set:
// its identity and creation time, defaults, a status, other managers'
// fields. None of it is drift; a change of a field the operator sets is.
func TestDriftIsOnlyInTheFieldsTheOperatorSets(t *testing.T) {
	in, err := newIntent(desiredWebDeployment())
	if err != nil {
		t.Fatal(err)
	}
	d := newDiffer(clientgoscheme.Scheme)
	if drift, err := d.drift(in, storedWebDeployment(t, in)); err != nil || len(drift) > 0 {
		t.Fatalf("the child as stored: drift %v, error %v", drift, err)
	}
	for name, change := range map[string]func(*appsv1.Deployment){
		"image":            func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "evil:1" },
		"a volume removed": func(d *appsv1.Deployment) { d.Spec.Template.Spec.Volumes = d.Spec.Template.Spec.Volumes[:1] },
		"the selector":     func(d *appsv1.Deployment) { d.Spec.Selector.MatchLabels["extra"] = "x" },
		"the owner's name": func(d *appsv1.Deployment) { d.OwnerReferences[0].Name = "other" },
		"the capabilities dropped": func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].SecurityContext.Capabilities.Drop = []corev1.Capability{"NET_RAW"}
		},
	} {
		live := storedWebDeployment(t, in)
		change(live)
		drift, err := d.drift(in, live)
		if err != nil || len(drift) == 0 {
			t.Errorf("%s changed: drift %v, error %v", name, drift, err)
		}
	}
}

// The desired object as storage keeps it loses what the apply configuration
// did not set; the values are storage's, and what storage dropped stays
// absent.
func TestOnlyIntendedKeepsWhatTheApplyConfigurationSets(t *testing.T) {
	for _, tc := range []struct {
		name             string
		stored, intended any
		want             any
	}{
		{
			name:     "fields the type always encodes",
			stored:   map[string]any{"metadata": map[string]any{"name": "site", "creationTimestamp": nil}, "status": map[string]any{}},
			intended: map[string]any{"metadata": map[string]any{"name": "site"}},
			want:     map[string]any{"metadata": map[string]any{"name": "site"}},
		},
		{
			name:     "storage's form of a value",
			stored:   map[string]any{"cpu": "500m", "replicas": int64(2)},
			intended: map[string]any{"cpu": "0.5", "replicas": float64(2)},
			want:     map[string]any{"cpu": "500m", "replicas": int64(2)},
		},
		{
			name:     "a value storage dropped",
			stored:   map[string]any{"env": []any{map[string]any{"name": "EMPTY"}}},
			intended: map[string]any{"env": []any{map[string]any{"name": "EMPTY", "value": ""}}},
			want:     map[string]any{"env": []any{map[string]any{"name": "EMPTY"}}},
		},
		{
			name: "list items, by position",
			stored: map[string]any{"containers": []any{
				map[string]any{"name": "web", "resources": map[string]any{}},
				map[string]any{"name": "proxy", "resources": map[string]any{}},
			}},
			intended: map[string]any{"containers": []any{map[string]any{"name": "web"}, map[string]any{"name": "proxy"}}},
			want:     map[string]any{"containers": []any{map[string]any{"name": "web"}, map[string]any{"name": "proxy"}}},
		},
		{
			name:     "an empty object set as such",
			stored:   map[string]any{"emptyDir": map[string]any{}},
			intended: map[string]any{"emptyDir": map[string]any{}},
			want:     map[string]any{"emptyDir": map[string]any{}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := onlyIntended(tc.stored, tc.intended); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// A child whose generation is still 1 and whose hash and metadata are the
// desired ones is known to be as the operator created it, without a
// comparison; anything else is compared.
func TestOnlyAChildUntouchedSinceItsCreationSkipsTheComparison(t *testing.T) {
	in, err := newIntent(desiredWebDeployment())
	if err != nil {
		t.Fatal(err)
	}
	created := func() *appsv1.Deployment {
		d := storedWebDeployment(t, in)
		// What others add (the Deployment controller's revision) is not
		// the operator's.
		d.Annotations["deployment.kubernetes.io/revision"] = "1"
		d.Labels["team"] = "web"
		d.OwnerReferences = append(d.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x", UID: "other"})
		// The cache keeps no pod template: the generation stands for it.
		d.Spec.Template = corev1.PodTemplateSpec{}
		// Nor most managed fields: of those the API server keeps, the
		// operator's create, the Deployment controller's revision and
		// status, only the first (TrimManagedFields).
		fields := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}
		d.ManagedFields = []metav1.ManagedFieldsEntry{
			{Manager: platform.Name, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: fields},
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: fields},
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", FieldsType: "FieldsV1", FieldsV1: fields, Subresource: "status"},
		}
		if _, err := TrimManagedFields(d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name   string
		change func(d *appsv1.Deployment)
		want   bool
	}{
		{"as created", func(*appsv1.Deployment) {}, true},
		{"spec changed since (generation 2)", func(d *appsv1.Deployment) { d.Generation = 2 }, false},
		{"no generation (a Service's kind)", func(d *appsv1.Deployment) { d.Generation = 0 }, false},
		{"created from another desired state", func(d *appsv1.Deployment) { d.Annotations[ConfigHashAnnotation] = "other" }, false},
		{"a label changed", func(d *appsv1.Deployment) { d.Labels["app.kubernetes.io/instance"] = "other" }, false},
		{"a label removed", func(d *appsv1.Deployment) { delete(d.Labels, "app.kubernetes.io/name") }, false},
		{"the hash annotation removed", func(d *appsv1.Deployment) { delete(d.Annotations, ConfigHashAnnotation) }, false},
		{"the controller reference removed", func(d *appsv1.Deployment) { d.OwnerReferences = d.OwnerReferences[1:] }, false},
		{"the controller reference no longer the controller", func(d *appsv1.Deployment) { d.OwnerReferences[0].Controller = ptr.To(false) }, false},
		{"made again by someone else from a copy (kubectl replace --force)", func(d *appsv1.Deployment) {
			d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-replace", Operation: metav1.ManagedFieldsOperationUpdate}}
		}, false},
		{"metadata put back by the operator since (its apply's entry, generation 1)", func(d *appsv1.Deployment) {
			d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: platform.Name, Operation: metav1.ManagedFieldsOperationApply}}
		}, true},
		{"made by the operator under its former name", func(d *appsv1.Deployment) {
			d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: platform.LegacyName, Operation: metav1.ManagedFieldsOperationUpdate}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := created()
			tc.change(d)
			if got := untouchedSinceCreated(d, in); got != tc.want {
				t.Errorf("untouched since created = %v, want %v", got, tc.want)
			}
		})
	}
}
