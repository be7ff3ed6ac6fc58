package backupjob

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/internal/podsecurity"
)

// FuzzJobTemplate builds run Jobs from arbitrary pod templates and checks
// the operator's verdict against the upstream Pod Security library's:
//
//   - the operator runs a template exactly when the library passes the pod
//     it will run (after the operator's defaults) and the template breaks
//     none of the placement rules the standard leaves to the cluster
//     (nodeName, control-plane nodes, runtimeClassName, inline CSI), and
//     its labels are none of those the operator reads as its own;
//   - a pod it runs mounts no ServiceAccount token unless the template asks;
//   - the CRD's own rules (the CEL of BackupJobTemplate, evaluated here as
//     the API server evaluates them) refuse nothing that the operator would
//     run: they only say sooner, and name the field, what the operator
//     refuses anyway.
//
// go test runs the seeds; go test -fuzz FuzzJobTemplate explores further.
func FuzzJobTemplate(f *testing.F) {
	validator := templateValidator(f)
	f.Add(int8(-1), int8(-1), int64(-1), int64(-1), int8(-1), "", "", "", "", "", "", "", int32(0), "", uint8(0), "", "", "", "", int8(-1), "", "")
	f.Add(int8(0), int8(-1), int64(0), int64(-1), int8(1), "SYS_ADMIN", "", "Unconfined", "", "Unconfined", "spc_t", "Unmasked", int32(22), "kernel.core_pattern", uint8(3), "node-1", "", "Exists", "runc", int8(1), "example.com/drill", "x")
	f.Add(int8(1), int8(1), int64(1000), int64(1000), int8(0), "NET_BIND_SERVICE", "ALL", "RuntimeDefault", "Localhost", "RuntimeDefault", "", "Default", int32(0), "net.ipv4.ip_unprivileged_port_start", uint8(1), "", "storage", "Exists", "", int8(0), "app.kubernetes.io/name", "backup")
	f.Add(int8(-1), int8(0), int64(-1), int64(0), int8(-1), "CHOWN", "NET_RAW", "", "Unconfined", "", "", "", int32(8080), "", uint8(9), "", "node-role.kubernetes.io/control-plane", "Exists", "", int8(-1), "app.kubernetes.io/name", "website")
	f.Add(int8(-1), int8(-1), int64(-1), int64(-1), int8(-1), "", "", "", "", "Localhost", "container_t", "", int32(0), "kernel.shm_rmid_forced", uint8(12), "", "node-role.kubernetes.io/master", "Equal", "", int8(-1), "app.kubernetes.io/managed-by", "me")
	f.Fuzz(func(t *testing.T, podNonRoot, containerNonRoot int8, podUser, containerUser int64, escalation int8,
		addCap, dropCap, podSeccomp, containerSeccomp, appArmor, seLinuxType, procMount string, hostPort int32,
		sysctl string, volume uint8, nodeName, tolerationKey, tolerationOp, runtimeClass string, automount int8, labelKey, labelValue string) {
		template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "copy", Image: "busybox:1.36"}}}}
		pod, c := &template.Spec, &template.Spec.Containers[0]
		psc, csc := &corev1.PodSecurityContext{}, &corev1.SecurityContext{}
		psc.RunAsNonRoot, csc.RunAsNonRoot = triState(podNonRoot), triState(containerNonRoot)
		if podUser >= 0 {
			psc.RunAsUser = ptr.To(podUser)
		}
		if containerUser >= 0 {
			csc.RunAsUser = ptr.To(containerUser)
		}
		csc.AllowPrivilegeEscalation = triState(escalation)
		if addCap != "" || dropCap != "" {
			csc.Capabilities = &corev1.Capabilities{}
			if addCap != "" {
				csc.Capabilities.Add = []corev1.Capability{corev1.Capability(addCap)}
			}
			if dropCap != "" {
				csc.Capabilities.Drop = []corev1.Capability{corev1.Capability(dropCap)}
			}
		}
		if podSeccomp != "" {
			psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileType(podSeccomp), LocalhostProfile: localhost(podSeccomp)}
		}
		if containerSeccomp != "" {
			csc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileType(containerSeccomp), LocalhostProfile: localhost(containerSeccomp)}
		}
		if appArmor != "" {
			csc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileType(appArmor), LocalhostProfile: localhost(appArmor)}
		}
		if seLinuxType != "" {
			psc.SELinuxOptions = &corev1.SELinuxOptions{Type: seLinuxType}
		}
		if procMount != "" {
			csc.ProcMount = ptr.To(corev1.ProcMountType(procMount))
		}
		if hostPort != 0 {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: hostPort}}
		}
		if sysctl != "" {
			psc.Sysctls = []corev1.Sysctl{{Name: sysctl, Value: "1"}}
		}
		if v := fuzzVolume(volume); v != nil {
			pod.Volumes = []corev1.Volume{{Name: "extra", VolumeSource: *v}}
		}
		pod.NodeName = nodeName
		if tolerationKey != "" || tolerationOp != "" {
			pod.Tolerations = []corev1.Toleration{{Key: tolerationKey, Operator: corev1.TolerationOperator(tolerationOp)}}
		}
		if runtimeClass != "" {
			pod.RuntimeClassName = ptr.To(runtimeClass)
		}
		pod.AutomountServiceAccountToken = triState(automount)
		pod.SecurityContext, c.SecurityContext = psc, csc
		if labelKey != "" {
			template.Labels = map[string]string{labelKey: labelValue}
		}

		bj := testBackupJob()
		bj.Spec.JobTemplate.Spec.Template = template
		job := desiredRunJob(bj, testRun)
		built := &job.Spec.Template
		refused := len(templateProblems(jobTemplatePath, bj.Spec.JobTemplate, job, podsecurity.Latest())) > 0

		library := podsecurity.Restricted(podsecurity.Latest(), &built.ObjectMeta, &built.Spec)
		extra := nodeName != "" || runtimeClass != "" || (tolerationKey == "" && tolerationOp == "Exists") ||
			tolerationKey == "node-role.kubernetes.io/control-plane" || tolerationKey == "node-role.kubernetes.io/master" ||
			(pod.Volumes != nil && pod.Volumes[0].CSI != nil) ||
			strings.HasPrefix(labelKey, "example.com/") || labelKey == "app.kubernetes.io/managed-by" ||
			(labelKey == "app.kubernetes.io/name" && labelValue == "website")
		if refused != (library != "" || extra) {
			t.Fatalf("operator refused: %v; library: %q; placement, runtime class, inline CSI or the operator's labels: %v", refused, library, extra)
		}
		if !refused && (built.Spec.AutomountServiceAccountToken == nil || (*built.Spec.AutomountServiceAccountToken && automount != 1)) {
			t.Errorf("automountServiceAccountToken %v for a template that said %d", built.Spec.AutomountServiceAccountToken, automount)
		}

		if errs := validateTemplate(t, validator, bj.Spec.JobTemplate); len(errs) > 0 && !refused {
			t.Errorf("the CRD refuses a template the operator runs: %v", errs)
		}
	})
}

func triState(v int8) *bool {
	switch v {
	case 0:
		return ptr.To(false)
	case 1:
		return ptr.To(true)
	}
	return nil
}

func localhost(profileType string) *string {
	if profileType == "Localhost" {
		return ptr.To("profiles/backup.json")
	}
	return nil
}

// fuzzVolume is one volume of each type the restricted standard allows,
// and of several it forbids.
func fuzzVolume(n uint8) *corev1.VolumeSource {
	sources := []*corev1.VolumeSource{
		nil,
		{EmptyDir: &corev1.EmptyDirVolumeSource{}},
		{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}},
		{HostPath: &corev1.HostPathVolumeSource{Path: "/"}},
		{Secret: &corev1.SecretVolumeSource{SecretName: "s"}},
		{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "other"}},
		{Projected: &corev1.ProjectedVolumeSource{}},
		{DownwardAPI: &corev1.DownwardAPIVolumeSource{}},
		{Ephemeral: &corev1.EphemeralVolumeSource{}},
		{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/"}},
		{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1", IQN: "iqn.2001-04.com.example:x"}},
		{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"10.0.0.1"}, RBDImage: "x"}},
		{FlexVolume: &corev1.FlexVolumeSource{Driver: "example/x"}},
		{CSI: &corev1.CSIVolumeSource{Driver: "nfs.csi.k8s.io"}},
		{Image: &corev1.ImageVolumeSource{Reference: "busybox:1.36"}},
		{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "e", Path: "p"}},
	}
	return sources[int(n)%len(sources)]
}

// templateValidator compiles the CEL rules of the BackupJob CRD's
// jobTemplate as the API server does.
func templateValidator(f testing.TB) *cel.Validator {
	data, err := os.ReadFile("../../../deploy/components/backupjob/crd.yaml")
	if err != nil {
		f.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		f.Fatal(err)
	}
	v1 := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["jobTemplate"]
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, internal, nil); err != nil {
		f.Fatal(err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		f.Fatal(err)
	}
	validator := cel.NewValidator(structural, false, celconfig.PerCallLimit)
	if validator == nil {
		f.Fatal("the jobTemplate schema has no CEL rules")
	}
	return validator
}

func validateTemplate(t *testing.T, validator *cel.Validator, template any) field.ErrorList {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(template)
	if err != nil {
		t.Fatal(err)
	}
	errs, _ := validator.Validate(context.Background(), jobTemplatePath, nil, obj, nil, celconfig.RuntimeCELCostBudget)
	return errs
}

// The CRD's rules, as FuzzJobTemplate evaluates them, refuse and accept:
// the fuzz test's comparison is not vacuous.
func TestTemplateValidatorJudges(t *testing.T) {
	validator := templateValidator(t)
	bj := testBackupJob()
	if errs := validateTemplate(t, validator, bj.Spec.JobTemplate); len(errs) > 0 {
		t.Errorf("refused an ordinary template: %v", errs)
	}
	bj.Spec.JobTemplate.Spec.Template.Spec.NodeName = "control-plane-1"
	errs := validateTemplate(t, validator, bj.Spec.JobTemplate)
	if len(errs) != 1 || errs[0].Field != "spec.jobTemplate.spec.template.spec.nodeName" {
		t.Errorf("want nodeName refused, got %v", errs)
	}
}
