package pgspec

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Tool is a PostgreSQL tool Job's role: the name of its container and the
// value of ToolLabel on its pods.
type Tool string

const (
	// ToolBaseBackup streams a base backup of an instance into a claim.
	ToolBaseBackup Tool = "pg-basebackup"
	// ToolStoreBackup streams a base backup of a primary into its
	// cluster's object store.
	ToolStoreBackup Tool = "pg-basebackup-store"
	// ToolVerify runs a restore drill's query.
	ToolVerify Tool = "pg-verify"
)

// ToolLabel marks the pods of the operator's PostgreSQL tool Jobs with
// their Tool: `kubectl get pods -l example.com/postgres-tool` lists them,
// and the local cluster's simulation finds them, and the container it
// runs, by it alone, without listing every run's pod.
const ToolLabel = "example.com/postgres-tool"

// ToolJob is one run of a tool of the operator's binary in a PostgreSQL
// image. Every PostgreSQL Job is built from one, so that they differ only
// in their tool, command and environment.
type ToolJob struct {
	Tool Tool
	// Image is the PostgreSQL image, OperatorImage the operator's, whose
	// binary the init container copies.
	Image, OperatorImage string
	// Args follow `instance` on the copied binary's command line.
	Args []string
	Env  []corev1.EnvVar
	// Retries is the Job's backoff limit.
	Retries int32
	// CASecret is the Secret whose ca.crt (CACertKey) is the CA of the
	// server the tool connects to, given to it as EnvCACert: the
	// cluster's ServerSecret. Empty: the tool does not verify the server.
	CASecret string
}

// Spec is the Job's spec: the pod laid out as an instance's (the same
// init container, volume, user and security contexts), the tool's result,
// or the end of its log, as its termination message.
func (t ToolJob) Spec() batchv1.JobSpec {
	container := corev1.Container{
		Name:                     string(t.Tool),
		Image:                    t.Image,
		Command:                  append([]string{ManagerPath, "instance"}, t.Args...),
		Env:                      t.env(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          RestrictedContainer(),
		VolumeMounts:             []corev1.VolumeMount{ToolsMount()},
	}
	return batchv1.JobSpec{
		BackoffLimit: ptr.To(t.Retries),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{ToolLabel: string(t.Tool)}},
			Spec: corev1.PodSpec{
				SecurityContext:    PodSecurityContext(),
				EnableServiceLinks: ptr.To(false),
				InitContainers:     []corev1.Container{InstallContainerOf(t.OperatorImage)},
				Containers:         []corev1.Container{container},
				Volumes:            []corev1.Volume{ToolsVolumeOf()},
			},
		},
	}
}

func (t ToolJob) env() []corev1.EnvVar {
	env := append([]corev1.EnvVar(nil), t.Env...)
	if t.CASecret != "" {
		env = append(env, SecretEnv(EnvCACert, t.CASecret, CACertKey))
	}
	return env
}

// SecretEnv is a variable from a key of a Secret.
func SecretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}
