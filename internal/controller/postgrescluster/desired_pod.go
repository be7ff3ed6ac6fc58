package postgrescluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

// SpecHashAnnotation, on a pod, is the hash of the pod the operator built:
// a pod whose hash differs from what the spec builds now is replaced in the
// order of an update.
const SpecHashAnnotation = "example.com/spec-hash"

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
	name := pgspec.InstanceName(pg.Name, n)
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pg.Namespace, Labels: instanceLabels(pg, name),
			OwnerReferences: []metav1.OwnerReference{controllerReference(pg)},
		},
		Spec: corev1.PodSpec{
			Hostname:                      name,
			Subdomain:                     pgspec.HeadlessService(pg.Name),
			ServiceAccountName:            pgspec.InstanceAccount(pg.Name),
			AutomountServiceAccountToken:  ptr.To(true),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			SecurityContext:               pgspec.PodSecurityContext(),
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
			InitContainers: []corev1.Container{pgspec.InstallContainerOf(opts.InstanceImage)},
			Containers: []corev1.Container{{
				Name:    pgspec.ContainerName,
				Image:   pg.Spec.Image,
				Command: []string{pgspec.ManagerPath, "instance", "run"},
				Env: append([]corev1.EnvVar{
					{Name: pgspec.EnvPodName, ValueFrom: fieldRef("metadata.name")},
					{Name: pgspec.EnvPodNamespace, ValueFrom: fieldRef("metadata.namespace")},
					{Name: pgspec.EnvNodeName, ValueFrom: fieldRef("spec.nodeName")},
					{Name: pgspec.EnvClusterName, Value: pg.Name},
					{Name: pgspec.EnvClusterDomain, Value: opts.ClusterDomain},
					{Name: pgspec.EnvPGData, Value: pgspec.PGData},
					{Name: pgspec.EnvPGBinDir, Value: pgspec.BinDir},
					{Name: pgspec.EnvSocketDir, Value: pgspec.SocketDir},
				}, storeEnv(pg)...),
				Ports: []corev1.ContainerPort{
					{Name: portName, ContainerPort: pgspec.Port, Protocol: corev1.ProtocolTCP},
					{Name: "status", ContainerPort: pgspec.StatusPort, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: pgspec.MetricsPort, Protocol: corev1.ProtocolTCP},
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
				SecurityContext: pgspec.RestrictedContainer(),
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: pgspec.DataDir},
					pgspec.ToolsMount(),
					{Name: "run", MountPath: pgspec.SocketDir},
					{Name: "tmp", MountPath: "/tmp"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}},
				pgspec.ToolsVolumeOf(),
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	restartedAt := pg.Annotations[v1alpha1.PostgresRestartedAtAnnotation]
	pod.Annotations = map[string]string{SpecHashAnnotation: podHash(pod, restartedAt)}
	if restartedAt != "" {
		pod.Annotations[v1alpha1.PostgresRestartedAtAnnotation] = restartedAt
	}
	return pod
}

// podHash is the hash of what the operator builds of a pod, by which it
// tells a pod of an older spec, or of before the rolling restart asked at
// restartedAt. Without one it is the spec's alone, so that pods made before
// restarts could be asked keep their hash.
func podHash(pod *corev1.Pod, restartedAt string) string {
	data, err := json.Marshal(pod.Spec)
	if err != nil {
		// A PodSpec always encodes.
		panic(fmt.Sprintf("encode a pod spec: %v", err))
	}
	if restartedAt != "" {
		data = append(append(data, '\n'), restartedAt...)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// storeEnv gives the instance manager the object stores of pg: the one it
// archives to, the one it is restored from.
func storeEnv(pg *v1alpha1.PostgresCluster) []corev1.EnvVar {
	var env []corev1.EnvVar
	if b := pg.Spec.Backup; b != nil {
		env = append(env, pgspec.StoreEnv(pgspec.ArchiveStore, &b.ObjectStore, pgspec.StorePath(&b.ObjectStore, pg.Namespace, pg.Name))...)
	}
	if b := pg.Spec.Bootstrap; b != nil && b.FromBackup != nil && b.FromBackup.ObjectStore != nil {
		env = append(env, pgspec.StoreEnv(pgspec.RecoveryStore, b.FromBackup.ObjectStore, b.FromBackup.ObjectStore.Path)...)
	}
	return env
}

func fieldRef(path string) *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
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
	name := pgspec.InstanceName(pg.Name, n)
	return &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pg.Namespace, Labels: instanceLabels(pg, name),
			Annotations: map[string]string{v1alpha1.PostgresClusterUIDAnnotation: string(pg.UID)}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: pg.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: pg.Spec.Storage.Size},
			},
		},
	}
}
