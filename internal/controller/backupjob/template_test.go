package backupjob

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/podsecurity"
)

// withPod changes the pod of testBackupJob's template.
func withPod(change func(*corev1.PodSpec)) func(*corev1.PodTemplateSpec) {
	return func(t *corev1.PodTemplateSpec) { change(&t.Spec) }
}

func withContainer(change func(*corev1.Container)) func(*corev1.PodTemplateSpec) {
	return withPod(func(p *corev1.PodSpec) { change(&p.Containers[0]) })
}

func withContainerSecurity(change func(*corev1.SecurityContext)) func(*corev1.PodTemplateSpec) {
	return withContainer(func(c *corev1.Container) {
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		change(c.SecurityContext)
	})
}

func withPodSecurity(change func(*corev1.PodSecurityContext)) func(*corev1.PodTemplateSpec) {
	return withPod(func(p *corev1.PodSpec) {
		if p.SecurityContext == nil {
			p.SecurityContext = &corev1.PodSecurityContext{}
		}
		change(p.SecurityContext)
	})
}

func withVolume(source corev1.VolumeSource) func(*corev1.PodTemplateSpec) {
	return withPod(func(p *corev1.PodSpec) {
		p.Volumes = append(p.Volumes, corev1.Volume{Name: "extra", VolumeSource: source})
	})
}

// Each way a template could get a pod out to its node, as the security
// review listed them, is refused with the field it is in, after the
// operator's defaults: the defaults fill in only what the template leaves
// unset, so a template that sets the contrary must be refused.
func TestTemplatesThatReachTheNodeAreRefused(t *testing.T) {
	const pod = "spec.jobTemplate.spec.template.spec"
	tests := map[string]struct {
		change func(*corev1.PodTemplateSpec)
		// want is what the refusal must say, from its start: the field.
		want []string
	}{
		"capabilities.add SYS_ADMIN": {withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}
		}), []string{pod + `: Forbidden: violates PodSecurity "restricted:latest"`, `"SYS_ADMIN"`}},
		"root with runAsNonRoot false": {withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.RunAsNonRoot, sc.RunAsUser = ptr.To(false), ptr.To(int64(0))
		}), []string{pod + ": Forbidden", "runAsNonRoot", "runAsUser=0"}},
		"root container": {withContainerSecurity(func(sc *corev1.SecurityContext) { sc.RunAsUser = ptr.To(int64(0)) }),
			[]string{pod + ": Forbidden", "runAsUser=0"}},
		"privilege escalation": {withContainerSecurity(func(sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = ptr.To(true) }),
			[]string{pod + ": Forbidden", "allowPrivilegeEscalation"}},
		"seccomp Unconfined": {withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}), []string{pod + ": Forbidden", "seccompProfile"}},
		"AppArmor Unconfined": {withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}), []string{pod + ": Forbidden", "AppArmor profile"}},
		"AppArmor annotation unconfined": {func(t *corev1.PodTemplateSpec) {
			t.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/copy": "unconfined"}
		}, []string{pod + ": Forbidden", "AppArmor"}},
		"seLinuxOptions": {withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t", User: "system_u"}
		}), []string{pod + ": Forbidden", "seLinuxOptions"}},
		"procMount Unmasked": {withContainerSecurity(func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) }),
			[]string{pod + ": Forbidden", "procMount"}},
		"hostPort": {withContainer(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 22, HostPort: 22}}
		}), []string{pod + ": Forbidden", "hostPort"}},
		"unsafe sysctl": {withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.Sysctls = []corev1.Sysctl{{Name: "kernel.core_pattern", Value: "|/tmp/x"}}
		}), []string{pod + ": Forbidden", "kernel.core_pattern"}},
		"nodeName": {withPod(func(p *corev1.PodSpec) { p.NodeName = "control-plane-1" }),
			[]string{pod + ".nodeName: Forbidden"}},
		"control-plane toleration": {withPod(func(p *corev1.PodSpec) {
			p.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}), []string{pod + ".tolerations[0].key: Forbidden"}},
		"master toleration": {withPod(func(p *corev1.PodSpec) {
			p.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpEqual, Value: ""}}
		}), []string{pod + ".tolerations[0].key: Forbidden"}},
		"toleration of every taint": {withPod(func(p *corev1.PodSpec) {
			p.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpExists}, {Operator: corev1.TolerationOpExists}}
		}), []string{pod + ".tolerations[1]: Forbidden"}},
		"control-plane nodeSelector": {withPod(func(p *corev1.PodSpec) {
			p.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		}), []string{pod + ".nodeSelector[node-role.kubernetes.io/control-plane]: Forbidden"}},
		"control-plane node affinity": {withPod(func(p *corev1.PodSpec) {
			p.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.NodeSelectorOpExists}}}},
			}}}
		}), []string{pod + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0]: Forbidden"}},
		"runtimeClassName": {withPod(func(p *corev1.PodSpec) { p.RuntimeClassName = ptr.To("runc-host") }),
			[]string{pod + ".runtimeClassName: Forbidden"}},
		"nfs": {withVolume(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "10.0.0.1", Path: "/"}}),
			[]string{pod + ": Forbidden", "nfs"}},
		"iscsi": {withVolume(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1", IQN: "iqn.2001-04.com.example:x"}}),
			[]string{pod + ": Forbidden", "iscsi"}},
		"rbd": {withVolume(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"10.0.0.1"}, RBDImage: "x"}}),
			[]string{pod + ": Forbidden", "rbd"}},
		"flexVolume": {withVolume(corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "example/x"}}),
			[]string{pod + ": Forbidden", "flexVolume"}},
		"inline csi": {withVolume(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "nfs.csi.k8s.io"}}),
			[]string{pod + ".volumes[0].csi: Forbidden"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			bj := testBackupJob()
			tt.change(&bj.Spec.JobTemplate.Spec.Template)
			errs := templateProblems(jobTemplatePath, bj.Spec.JobTemplate, desiredRunJob(bj, testRun), podsecurity.Latest())
			if len(errs) == 0 {
				t.Fatal("accepted")
			}
			got := errs.ToAggregate().Error()
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("refusal %q does not say %q", got, want)
				}
			}
		})
	}
}

// Templates a legitimate user writes run: the examples', the end-to-end
// tests', and one that sets its own user, group, capabilities drop and
// an allowed sysctl, a node selector and an ordinary toleration.
func TestOrdinaryTemplatesRun(t *testing.T) {
	tests := map[string]func(*corev1.PodTemplateSpec){
		"as written": func(*corev1.PodTemplateSpec) {},
		"own user":   withContainerSecurity(func(sc *corev1.SecurityContext) { sc.RunAsUser = ptr.To(int64(1000)) }),
		"own settings": withPodSecurity(func(sc *corev1.PodSecurityContext) {
			sc.RunAsUser, sc.RunAsGroup, sc.FSGroup = ptr.To(int64(1000)), ptr.To(int64(1000)), ptr.To(int64(1000))
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("backup.json")}
			sc.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "0"}}
		}),
		"NET_BIND_SERVICE": withContainerSecurity(func(sc *corev1.SecurityContext) {
			sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_BIND_SERVICE"}}
		}),
		"placed on storage nodes": withPod(func(p *corev1.PodSpec) {
			p.NodeSelector = map[string]string{"storage": "true"}
			p.Tolerations = []corev1.Toleration{{Key: "storage", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		}),
		"ordinary volumes": func(t *corev1.PodTemplateSpec) {
			withVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})(t)
			withVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s3"}})(t)
			withVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}})(t)
		},
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			bj := testBackupJob()
			change(&bj.Spec.JobTemplate.Spec.Template)
			for _, v := range []podsecurity.Version{podsecurity.Latest(), podsecurity.VersionOf("v1.25.0"), podsecurity.VersionOf("v1.37.2")} {
				if errs := templateProblems(jobTemplatePath, bj.Spec.JobTemplate, desiredRunJob(bj, testRun), v); len(errs) > 0 {
					t.Errorf("refused at %s: %v", v, errs)
				}
			}
		})
	}
}

// The pods of runs and drills get no ServiceAccount token unless their
// template asks for one.
func TestJobPodsMountNoTokenUnlessAsked(t *testing.T) {
	bj := testBackupJob()
	if got := desiredRunJob(bj, testRun).Spec.Template.Spec.AutomountServiceAccountToken; got == nil || *got {
		t.Errorf("automountServiceAccountToken %v, want false", got)
	}
	bj.Spec.JobTemplate.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(true)
	if got := desiredRunJob(bj, testRun).Spec.Template.Spec.AutomountServiceAccountToken; got == nil || !*got {
		t.Errorf("automountServiceAccountToken %v, want the template's true", got)
	}
}

// Labels and annotations the operator reads as its own are refused in a
// template, naming the key: a run Job labelled example.com/drill would pass
// for a restore drill (and its success mark the backup verified), a pod
// labelled as a Website's would serve its traffic. Other keys, those of
// other example.com subdomains among them, are the user's.
func TestTemplatesWithTheOperatorsLabelsAreRefused(t *testing.T) {
	const tmpl = "spec.jobTemplate."
	tests := map[string]struct {
		jobLabels, jobAnnotations, podLabels, podAnnotations map[string]string
		want                                                 []string
	}{
		"drill label on the Job": {jobLabels: map[string]string{"example.com/drill": "nightly-1"},
			want: []string{tmpl + "metadata.labels[example.com/drill]: Forbidden"}},
		"BackupJob label on the pod": {podLabels: map[string]string{"example.com/backupjob": "other"},
			want: []string{tmpl + "spec.template.metadata.labels[example.com/backupjob]: Forbidden"}},
		"managed-by": {jobLabels: map[string]string{"app.kubernetes.io/managed-by": "platform-operator"},
			want: []string{tmpl + "metadata.labels[app.kubernetes.io/managed-by]: Forbidden"}},
		"a Website's selector labels": {podLabels: map[string]string{"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": "shop"},
			want: []string{tmpl + "spec.template.metadata.labels[app.kubernetes.io/name]: Forbidden: may not be website"}},
		"result annotations": {jobAnnotations: map[string]string{"example.com/verified": "Passed"}, podAnnotations: map[string]string{"example.com/result": "Succeeded"},
			want: []string{tmpl + "metadata.annotations[example.com/verified]: Forbidden", tmpl + "spec.template.metadata.annotations[example.com/result]: Forbidden"}},
		"the user's": {
			jobLabels:      map[string]string{"team": "storage", "app.kubernetes.io/name": "backup", "app.kubernetes.io/instance": "shop"},
			podLabels:      map[string]string{"app.kubernetes.io/part-of": "website", "example.com.au/x": "y"},
			podAnnotations: map[string]string{"simulation.example.com/fail": "true", "app.kubernetes.io/managed-by": "annotations are not selected"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			bj := testBackupJob()
			template := bj.Spec.JobTemplate
			template.Labels, template.Annotations = tt.jobLabels, tt.jobAnnotations
			template.Spec.Template.Labels, template.Spec.Template.Annotations = tt.podLabels, tt.podAnnotations
			errs := templateProblems(jobTemplatePath, template, desiredRunJob(bj, testRun), podsecurity.Latest())
			if len(errs) != len(tt.want) {
				t.Fatalf("refusals %v, want %d", errs, len(tt.want))
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), want) {
					t.Errorf("refusal %q, want it to start with %q", errs[i].Error(), want)
				}
			}
		})
	}
	if websiteNameLabel != website.NameLabel || websiteName != website.AppName {
		t.Errorf("the Website's selector is %s=%s, not %s=%s", website.NameLabel, website.AppName, websiteNameLabel, websiteName)
	}
}

// A template whose Job is not one pod's copy run to its end is refused,
// in spec.jobTemplate and in spec.verify.jobTemplate alike, with
// InvalidSpec naming the field: completions 0 would complete the Job
// without a pod (an empty claim counted as the newest successful backup,
// a drill that checked nothing as passed), a suspended Job never ends and
// holds the schedule under Forbid. The values that mean one copy run.
func TestTemplatesThatAreNotOneCopyAreRefused(t *testing.T) {
	tests := map[string]struct {
		change func(*batchv1.JobSpec)
		// field is the field the refusal names, under the template's
		// path; "" for a template that runs.
		field string
	}{
		"completions 0":          {func(s *batchv1.JobSpec) { s.Completions = ptr.To(int32(0)) }, "spec.completions"},
		"completions 3":          {func(s *batchv1.JobSpec) { s.Completions = ptr.To(int32(3)) }, "spec.completions"},
		"parallelism 0":          {func(s *batchv1.JobSpec) { s.Parallelism = ptr.To(int32(0)) }, "spec.parallelism"},
		"parallelism 2":          {func(s *batchv1.JobSpec) { s.Parallelism = ptr.To(int32(2)) }, "spec.parallelism"},
		"suspend":                {func(s *batchv1.JobSpec) { s.Suspend = ptr.To(true) }, "spec.suspend"},
		"completionMode Indexed": {func(s *batchv1.JobSpec) { s.CompletionMode = ptr.To(batchv1.IndexedCompletion) }, "spec.completionMode"},
		"all unset":              {func(*batchv1.JobSpec) {}, ""},
		"one copy, spelled out": {func(s *batchv1.JobSpec) {
			s.Completions, s.Parallelism, s.Suspend, s.CompletionMode = ptr.To(int32(1)), ptr.To(int32(1)), ptr.To(false), ptr.To(batchv1.NonIndexedCompletion)
		}, ""},
	}
	for name, tt := range tests {
		for _, where := range []string{"run", "drill"} {
			t.Run(name+"/"+where, func(t *testing.T) {
				bj := testBackupJob()
				bj.Spec.Verify = &v1alpha1.BackupVerify{JobTemplate: bj.Spec.JobTemplate.DeepCopy()}
				path, template := jobTemplatePath, bj.Spec.JobTemplate
				if where == "drill" {
					path, template = verifyTemplatePath, bj.Spec.Verify.JobTemplate
				}
				tt.change(&template.Spec)
				job := desiredRunJob(bj, testRun)
				if where == "drill" {
					job = desiredDrillJob(bj, &backup{name: testRun.name, kind: v1alpha1.VolumeBackup, scheduled: testRun.scheduled})
				}
				r := &Reconciler{PodSecurityVersion: podsecurity.Latest()}
				var out outcome
				refused := r.refuseTemplate(bj, path, template, job, &out)
				if tt.field == "" {
					if refused {
						t.Fatalf("refused: %v", out.Err)
					}
					return
				}
				if !refused || out.Problem == nil {
					t.Fatal("accepted")
				}
				if out.Problem.Reason != v1alpha1.BackupJobInvalidSpecReason {
					t.Errorf("reason %s, want %s", out.Problem.Reason, v1alpha1.BackupJobInvalidSpecReason)
				}
				if want := path.String() + "." + tt.field + ": Forbidden"; !strings.Contains(out.Problem.Message, want) {
					t.Errorf("message %q does not say %q", out.Problem.Message, want)
				}
				if out.Retry {
					t.Error("a refused spec is retried with backoff")
				}
			})
		}
	}
}
