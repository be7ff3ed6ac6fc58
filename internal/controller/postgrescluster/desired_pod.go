package postgrescluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
)

// The pod's layout, which the instance manager reads from its environment.
const (
	// SpecHashAnnotation, on a pod, is the hash of the pod the operator
	// built: a pod whose hash differs from what the spec builds now is
	// replaced in the order of an update.
	SpecHashAnnotation = "example.com/spec-hash"

	containerName = "postgres"
	controllerDir = "/controller"
	managerPath   = controllerDir + "/manager"
	dataDir       = "/var/lib/postgresql/data"
	pgData        = dataDir + "/pgdata"
	socketDir     = "/run/postgresql"
	pgBinDir      = "/usr/lib/postgresql/15/bin"
	// statusPort serves the instance manager's /healthz and /readyz.
	statusPort = 8000
	// postgresUID is the postgres user of the official PostgreSQL images.
	postgresUID = 999
)

// Environment of the instance manager.
const (
	EnvPodName       = "POD_NAME"
	EnvPodNamespace  = "POD_NAMESPACE"
	EnvNodeName      = "NODE_NAME"
	EnvClusterName   = "CLUSTER_NAME"
	EnvClusterDomain = "CLUSTER_DOMAIN"
	EnvPGData        = "PGDATA"
	EnvPGBinDir      = "PG_BIN_DIR"
	EnvSocketDir     = "PG_SOCKET_DIR"
)

// PodOptions are what the pod needs besides the cluster's spec.
type PodOptions struct {
	// InstanceImage is the operator's image, whose binary the init
	// container copies into the pod.
	InstanceImage string
	ClusterDomain string
}

// DesiredPod is the pod of the instance of ordinal n: a pet, named and
// reachable as CLUSTER-n, whose first process is the instance manager.
// The role label is not part of it: the operator sets it as it routes.
func DesiredPod(pg *v1alpha1.PostgresCluster, n int, opts PodOptions) *corev1.Pod {
	name := instanceName(pg.Name, n)
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pg.Namespace, Labels: instanceLabels(pg, name),
			OwnerReferences: []metav1.OwnerReference{controllerReference(pg)},
		},
		Spec: corev1.PodSpec{
			Hostname:                      name,
			Subdomain:                     headlessService(pg),
			ServiceAccountName:            instanceAccount(pg),
			AutomountServiceAccountToken:  ptr.To(true),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](postgresUID),
				RunAsGroup:     ptr.To[int64](postgresUID),
				FSGroup:        ptr.To[int64](postgresUID),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			// Instances of one cluster on different nodes where the
			// cluster has them: a node lost takes one instance.
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 100,
					PodAffinityTerm: corev1.PodAffinityTerm{
						TopologyKey:   corev1.LabelHostname,
						LabelSelector: &metav1.LabelSelector{MatchLabels: selectorLabels(pg)},
					},
				}},
			}},
			InitContainers: []corev1.Container{{
				Name:            "bootstrap",
				Image:           opts.InstanceImage,
				Command:         []string{"/platform-operator", "instance", "install", managerPath},
				SecurityContext: restrictedContainer(),
				VolumeMounts:    []corev1.VolumeMount{{Name: "controller", MountPath: controllerDir}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
			Containers: []corev1.Container{{
				Name:    containerName,
				Image:   pg.Spec.Image,
				Command: []string{managerPath, "instance", "run"},
				Env: []corev1.EnvVar{
					{Name: EnvPodName, ValueFrom: fieldRef("metadata.name")},
					{Name: EnvPodNamespace, ValueFrom: fieldRef("metadata.namespace")},
					{Name: EnvNodeName, ValueFrom: fieldRef("spec.nodeName")},
					{Name: EnvClusterName, Value: pg.Name},
					{Name: EnvClusterDomain, Value: opts.ClusterDomain},
					{Name: EnvPGData, Value: pgData},
					{Name: EnvPGBinDir, Value: pgBinDir},
					{Name: EnvSocketDir, Value: socketDir},
				},
				Ports: []corev1.ContainerPort{
					{Name: portName, ContainerPort: PostgresPort, Protocol: corev1.ProtocolTCP},
					{Name: "status", ContainerPort: statusPort, Protocol: corev1.ProtocolTCP},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("status")}},
					PeriodSeconds: 5, FailureThreshold: 3,
				},
				// The instance manager answers /healthz while it runs,
				// also while PostgreSQL recovers: it restarts PostgreSQL
				// itself, and a kubelet restart of the whole container
				// would only delay that.
				LivenessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("status")}},
					PeriodSeconds: 10, FailureThreshold: 6,
				},
				Resources:       resourcesOf(pg),
				SecurityContext: restrictedContainer(),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: dataDir},
					{Name: "controller", MountPath: controllerDir},
					{Name: "run", MountPath: socketDir},
					{Name: "tmp", MountPath: "/tmp"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}},
				{Name: "controller", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	pod.Annotations = map[string]string{SpecHashAnnotation: podHash(pod)}
	return pod
}

// podHash is the hash of what the operator builds of a pod, by which it
// tells a pod of an older spec.
func podHash(pod *corev1.Pod) string {
	data, err := json.Marshal(pod.Spec)
	if err != nil {
		// A PodSpec always encodes.
		panic(fmt.Sprintf("encode a pod spec: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
}

// restrictedContainer is the security context of the restricted Pod
// Security Standard, with a read-only root: PostgreSQL writes only to its
// volumes.
func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func resourcesOf(pg *v1alpha1.PostgresCluster) corev1.ResourceRequirements {
	if pg.Spec.Resources == nil {
		return corev1.ResourceRequirements{}
	}
	return *pg.Spec.Resources.DeepCopy()
}

// DesiredClaim is the claim of the instance of ordinal n. It carries no
// owner reference: deleting the PostgresCluster keeps it unless the
// deletion policy says otherwise.
func DesiredClaim(pg *v1alpha1.PostgresCluster, n int) *corev1.PersistentVolumeClaim {
	name := instanceName(pg.Name, n)
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pg.Namespace, Labels: instanceLabels(pg, name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: pg.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: pg.Spec.Storage.Size},
			},
		},
	}
}
