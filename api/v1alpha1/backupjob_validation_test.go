package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// These tests send BackupJobs to a real API server with the CRD of deploy/
// (suite_test.go), and check what it defaults, what it accepts, and that each
// refusal names the field. deploy/ is generated with generateEmbeddedObjectMeta,
// without which the API server would prune the Job template's labels; make
// verify-generate keeps it in step with the markers.
func TestBackupJobValidation(t *testing.T) {
	suite.NeedsAPIServer(t)
	c := suite.Client
	t.Run("defaults", func(t *testing.T) { testBackupJobDefaults(t, c) })
	t.Run("accepted", func(t *testing.T) { testBackupJobsAccepted(t, c) })
	t.Run("refused", func(t *testing.T) { testBackupJobsRefused(t, c) })
	t.Run("name", func(t *testing.T) { testBackupJobNames(t, c) })
	t.Run("status", func(t *testing.T) { testBackupJobStatus(t, c) })
}

// minimalBackupJob is the smallest BackupJob spec the API server accepts.
const minimalBackupJob = `
spec:
  schedule: "@daily"
  source: {persistentVolumeClaimName: data}
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: copy, image: busybox:1.36, command: [cp, -a, /source/., /backup/]}]
`

// backupJob parses a BackupJob from YAML (below metadata) with the given name.
func backupJob(t *testing.T, name, yamlBody string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	doc := "apiVersion: example.com/v1alpha1\nkind: BackupJob\nmetadata:\n  name: " + name + "\n  namespace: default\n" + yamlBody
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("test case YAML: %v\n%s", err, doc)
	}
	return obj
}

// backupJobWith returns minimalBackupJob with one more line of YAML, indented under
// spec, for example "timeZone: Local".
func backupJobWith(extra string) string {
	return minimalBackupJob + "  " + strings.ReplaceAll(strings.TrimSpace(extra), "\n", "\n  ") + "\n"
}

// backupJobWithPod returns minimalBackupJob with extra YAML lines under the pod spec of
// the job template.
func backupJobWithPod(extra string) string {
	return minimalBackupJob + "          " + strings.ReplaceAll(strings.TrimSpace(extra), "\n", "\n          ") + "\n"
}

func testBackupJobDefaults(t *testing.T, c client.Client) {
	g := NewWithT(t)
	obj := backupJob(t, "defaults", minimalBackupJob)
	g.Expect(c.Create(t.Context(), obj)).To(Succeed())

	spec := obj.Object["spec"].(map[string]any)
	g.Expect(spec).To(HaveKeyWithValue("timeZone", "UTC"))
	g.Expect(spec).To(HaveKeyWithValue("suspend", false))
	g.Expect(spec).To(HaveKeyWithValue("concurrencyPolicy", "Forbid"))
	g.Expect(spec).To(HaveKeyWithValue("deletionPolicy", "Retain"))
	g.Expect(spec).To(HaveKeyWithValue("target", map[string]any{"volume": map[string]any{}}))
	g.Expect(spec).To(HaveKeyWithValue("retention", map[string]any{"keepLast": int64(7), "keepFailed": int64(1)}))
	g.Expect(spec).To(HaveKeyWithValue("successfulJobsHistoryLimit", int64(3)))
	g.Expect(spec).To(HaveKeyWithValue("failedJobsHistoryLimit", int64(3)))
	g.Expect(spec).NotTo(HaveKey("startingDeadlineSeconds"))
	g.Expect(spec).NotTo(HaveKey("verify"))

	// A retention that is given is not merged with the default keepLast:
	// only keepFailed has a default of its own.
	obj = backupJob(t, "defaults-retention", backupJobWith("retention: {keepDaily: 7}"))
	g.Expect(c.Create(t.Context(), obj)).To(Succeed())
	g.Expect(obj.Object["spec"]).To(HaveKeyWithValue("retention", map[string]any{"keepDaily": int64(7), "keepFailed": int64(1)}))

	obj = backupJob(t, "defaults-verify", backupJobWith(`
verify:
  jobTemplate:
    spec:
      template:
        spec:
          containers: [{name: check, image: busybox:1.36}]`))
	g.Expect(c.Create(t.Context(), obj)).To(Succeed())
	everyNth, _, _ := unstructured.NestedInt64(obj.Object, "spec", "verify", "everyNth")
	g.Expect(everyNth).To(Equal(int64(1)))
}

func testBackupJobsAccepted(t *testing.T, c client.Client) {
	tests := []struct{ name, body string }{
		{"every 10s", `
spec:
  schedule: "@every 10s"
  source: {persistentVolumeClaimName: data}
  jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}`},
		{"every 1h30m", strings.Replace(minimalBackupJob, "@daily", "@every 1h30m", 1)},
		{"cron with names and steps", strings.Replace(minimalBackupJob, "@daily", "30 2 */2 JAN-JUN MON-FRI", 1)},
		{"question mark and lists", strings.Replace(minimalBackupJob, "@daily", "0,30 1-5 ? * *", 1)},
		{"everything set", `
spec:
  schedule: "30 2 * * *"
  timeZone: America/Argentina/ComodRivadavia
  suspend: true
  concurrencyPolicy: Replace
  startingDeadlineSeconds: 600
  runNow: "2026-11-30T12:00:00Z"
  source: {persistentVolumeClaimName: data.volume-1}
  target: {volume: {storageClassName: fast.example.com, size: 20Gi}}
  retention: {keepLast: 3, keepDaily: 7, keepWeekly: 4, keepMonthly: 12, keepFailed: 2}
  deletionPolicy: Delete
  successfulJobsHistoryLimit: 0
  failedJobsHistoryLimit: 100
  verify:
    everyNth: 7
    jobTemplate:
      spec:
        template:
          spec:
            serviceAccountName: default
            containers: [{name: check, image: busybox, securityContext: {privileged: false}}]
  jobTemplate:
    metadata:
      labels: {team: storage}
    spec:
      backoffLimit: 2
      template:
        spec:
          hostNetwork: false
          serviceAccountName: ""
          volumes: [{name: scratch, emptyDir: {}}, {name: config, configMap: {name: copy-config}}]
          initContainers: [{name: prepare, image: busybox}]
          containers: [{name: copy, image: busybox, securityContext: {allowPrivilegeEscalation: false}}]`},
		{"volume with size and class", backupJobWith("target: {volume: {storageClassName: local, size: 10Gi}}")},
		{"snapshot without a jobTemplate", `
spec:
  schedule: "@hourly"
  source: {persistentVolumeClaimName: data}
  target: {snapshot: {volumeSnapshotClassName: csi-snapclass}}
  verify:
    jobTemplate: {spec: {template: {spec: {containers: [{name: check, image: busybox}]}}}}`},
		{"timeZone Etc/GMT+5", backupJobWith("timeZone: Etc/GMT+5")},
		{"a PostgresCluster's base backups: the default volume target, no jobTemplate", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}`},
		{"a PostgresCluster's base backups into its object store", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}
  target: {objectStore: {}}`},
		{"a PostgresCluster's object-store backups checked by a query", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}
  target: {objectStore: {}}
  verify: {sql: SELECT true}`},
		{"a PostgresCluster's backups checked by a query", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}
  verify: {sql: "SELECT count(*) > 0 FROM orders"}`},
		{"labels and annotations of the user's", strings.Replace(strings.Replace(minimalBackupJob,
			"  jobTemplate:\n", "  jobTemplate:\n    metadata: {labels: {app.kubernetes.io/name: backup, team: a}, annotations: {owner: team-a}}\n", 1),
			"      template:\n", "      template:\n        metadata: {labels: {app.kubernetes.io/instance: shop}, annotations: {simulation.example.com/fail: \"true\"}}\n", 1)},
		{"restricted settings of its own", backupJobWithPod(`
securityContext: {runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000, seccompProfile: {type: Localhost, localhostProfile: backup.json}, seLinuxOptions: {type: container_t, level: "s0:c1,c2"}}
nodeSelector: {storage: "true"}
tolerations: [{key: storage, operator: Exists, effect: NoSchedule}, {key: node.kubernetes.io/not-ready, operator: Exists}]
initContainers: [{name: init, image: busybox, securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, procMount: Default, capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}}]
volumes: [{name: tmp, emptyDir: {}}, {name: creds, secret: {secretName: s3}}, {name: conf, projected: {sources: [{configMap: {name: c}}]}}, {name: info, downwardAPI: {items: []}}, {name: scratch, ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}}, {name: old, persistentVolumeClaim: {claimName: old}}, {name: tools, image: {reference: "busybox:1.36"}}]`)},
		{"retention adding up to 400", backupJobWith("retention: {keepLast: 100, keepDaily: 100, keepWeekly: 100, keepMonthly: 100, keepFailed: 0}")},
		{"object-store backups drilled at their end", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}
  target: {objectStore: {}}
  verify: {sql: SELECT true, recoveryTarget: BackupEnd}`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := backupJob(t, fmt.Sprintf("accepted-%d", i), tt.body)
			if err := c.Create(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
		})
	}

	// The Job template's metadata is kept, not pruned: the CRD must be
	// generated with generateEmbeddedObjectMeta.
	g := NewWithT(t)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(backupJob(t, "x", "").GroupVersionKind())
	g.Expect(c.Get(t.Context(), client.ObjectKey{Namespace: "default", Name: "accepted-4"}, obj)).To(Succeed())
	labels, _, _ := unstructured.NestedStringMap(obj.Object, "spec", "jobTemplate", "metadata", "labels")
	g.Expect(labels).To(Equal(map[string]string{"team": "storage"}))
}

func testBackupJobsRefused(t *testing.T, c client.Client) {
	const pod = "spec.jobTemplate.spec.template.spec."
	// field is the start of the error: the field's path, and where one field
	// has several rules, the message of the rule that must refuse.
	tests := []struct{ name, body, field string }{
		// schedule and timeZone
		{"no schedule", strings.Replace(minimalBackupJob, `schedule: "@daily"`, "", 1), "spec.schedule"},
		{"empty schedule", strings.Replace(minimalBackupJob, `"@daily"`, `""`, 1), "spec.schedule"},
		{"schedule of four fields", strings.Replace(minimalBackupJob, `"@daily"`, `"* * * *"`, 1), "spec.schedule"},
		{"schedule of six fields", strings.Replace(minimalBackupJob, `"@daily"`, `"0 * * * * *"`, 1), "spec.schedule"},
		{"schedule in words", strings.Replace(minimalBackupJob, `"@daily"`, `"every day"`, 1), "spec.schedule"},
		{"unknown descriptor", strings.Replace(minimalBackupJob, `"@daily"`, `"@fortnightly"`, 1), "spec.schedule"},
		{"schedule with a time zone", strings.Replace(minimalBackupJob, `"@daily"`, `"TZ=Europe/Berlin 0 2 * * *"`, 1), "spec.schedule: Forbidden: set the time zone in spec.timeZone"},
		{"schedule with CRON_TZ", strings.Replace(minimalBackupJob, `"@daily"`, `"CRON_TZ=UTC 0 2 * * *"`, 1), "spec.schedule: Forbidden: set the time zone in spec.timeZone"},
		{"every 500ms", strings.Replace(minimalBackupJob, `"@daily"`, `"@every 500ms"`, 1), "spec.schedule: Invalid value: \"@every 500ms\": schedule must be"},
		{"every 1.5s", strings.Replace(minimalBackupJob, `"@daily"`, `"@every 1.5s"`, 1), "spec.schedule: Invalid value: \"@every 1.5s\": schedule must be"},
		{"every 0s", strings.Replace(minimalBackupJob, `"@daily"`, `"@every 0s"`, 1), "spec.schedule: Invalid value: \"@every 0s\": @every needs a duration of at least 1s"},
		{"every without a unit", strings.Replace(minimalBackupJob, `"@daily"`, `"@every 10"`, 1), "spec.schedule"},
		{"schedule on two lines", strings.Replace(minimalBackupJob, `"@daily"`, `"0 2 * * *\n0 3 * * *"`, 1), "spec.schedule"},
		{"schedule of 129 characters", strings.Replace(minimalBackupJob, `"@daily"`, `"`+strings.Repeat("1,", 62)+`1 * * * *"`, 1), "spec.schedule"},
		{"timeZone Local", backupJobWith("timeZone: Local"), "spec.timeZone"},
		{"timeZone climbing out", backupJobWith("timeZone: ../../etc/passwd"), "spec.timeZone"},
		{"timeZone with a space", backupJobWith(`timeZone: "Europe/Berlin Paris"`), "spec.timeZone"},
		{"timeZone empty", backupJobWith(`timeZone: ""`), "spec.timeZone"},
		{"timeZone of 65 characters", backupJobWith("timeZone: " + strings.Repeat("Abcdefghijklm/", 4) + "Abcdefghi"), "spec.timeZone"},

		// policies and numbers
		{"unknown concurrencyPolicy", backupJobWith("concurrencyPolicy: Sometimes"), "spec.concurrencyPolicy"},
		{"startingDeadlineSeconds 0", backupJobWith("startingDeadlineSeconds: 0"), "spec.startingDeadlineSeconds"},
		{"empty runNow", backupJobWith(`runNow: ""`), "spec.runNow"},
		{"runNow of 65 characters", backupJobWith("runNow: " + strings.Repeat("x", 65)), "spec.runNow"},
		{"unknown deletionPolicy", backupJobWith("deletionPolicy: Orphan"), "spec.deletionPolicy"},
		{"history limit 101", backupJobWith("successfulJobsHistoryLimit: 101"), "spec.successfulJobsHistoryLimit"},
		{"negative failed history", backupJobWith("failedJobsHistoryLimit: -1"), "spec.failedJobsHistoryLimit"},
		{"negative keepLast", backupJobWith("retention: {keepLast: -1}"), "spec.retention.keepLast"},
		{"keepDaily 401", backupJobWith("retention: {keepDaily: 401}"), "spec.retention.keepDaily"},
		{"keepWeekly 261", backupJobWith("retention: {keepWeekly: 261}"), "spec.retention.keepWeekly"},
		{"keepMonthly 241", backupJobWith("retention: {keepMonthly: 241}"), "spec.retention.keepMonthly"},
		{"keepFailed 101", backupJobWith("retention: {keepFailed: 101}"), "spec.retention.keepFailed"},
		{"retention adding up to 401", backupJobWith("retention: {keepLast: 100, keepDaily: 100, keepWeekly: 100, keepMonthly: 100, keepFailed: 1}"), "spec.retention: Invalid value: keepLast, keepDaily, keepWeekly, keepMonthly and keepFailed may add up to at most 400"},
		{"verify everyNth 0", backupJobWith("verify: {everyNth: 0, jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}}"), "spec.verify.everyNth"},
		{"verify without a template", backupJobWith("verify: {everyNth: 1}"), "spec.verify: Invalid value: a claim's backups are checked by verify.jobTemplate (required), not verify.sql"},
		{"verify.sql for a claim", backupJobWith("verify: {sql: \"SELECT true\", jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}}"),
			"spec.verify: Invalid value: a claim's backups are checked by verify.jobTemplate"},
		{"verify.jobTemplate for a PostgresCluster", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}
  verify: {jobTemplate: {spec: {template: {spec: {containers: [{name: c, image: busybox}]}}}}}`, "spec.verify: Invalid value: a PostgresCluster's backups are checked by verify.sql (required)"},
		{"a drill at the end of a volume backup", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}
  verify: {sql: SELECT true, recoveryTarget: BackupEnd}`, "spec.verify.recoveryTarget: Forbidden: verify.recoveryTarget BackupEnd is for backups in an object store"},
		{"an unknown recovery target", `
spec:
  schedule: "@daily"
  source: {postgresCluster: db}
  target: {objectStore: {}}
  verify: {sql: SELECT true, recoveryTarget: Yesterday}`, "spec.verify.recoveryTarget: Unsupported value: \"Yesterday\""},

		// source and target
		{"no source", strings.Replace(minimalBackupJob, "source: {persistentVolumeClaimName: data}", "", 1), "spec.source"},
		{"claim name not a DNS name", strings.Replace(minimalBackupJob, "persistentVolumeClaimName: data", "persistentVolumeClaimName: Data_1", 1), "spec.source.persistentVolumeClaimName"},
		{"empty target", backupJobWith("target: {}"), "spec.target: Invalid value: set exactly one of volume, snapshot and objectStore"},
		{"volume and snapshot", backupJobWith("target: {volume: {}, snapshot: {}}"), "spec.target: Invalid value: set exactly one of volume, snapshot and objectStore"},
		{"volume and objectStore", backupJobWith("target: {volume: {}, objectStore: {}}"), "spec.target: Invalid value: set exactly one of volume, snapshot and objectStore"},
		{"objectStore of a claim", backupJobWith("target: {objectStore: {}}"),
			"spec.target.objectStore: Forbidden: target.objectStore takes a postgresCluster source"},
		{"volume size 0", backupJobWith("target: {volume: {size: 0}}"), "spec.target.volume.size: Invalid value: 0: size must be greater than zero"},
		{"negative volume size", backupJobWith("target: {volume: {size: -1Gi}}"), "spec.target.volume.size"},
		{"volume size that is no quantity", backupJobWith("target: {volume: {size: lots}}"), "spec.target.volume.size"},
		{"storage class not a DNS name", backupJobWith("target: {volume: {storageClassName: Fast SSD}}"), "spec.target.volume.storageClassName"},
		{"snapshot class not a DNS name", backupJobWith(`target: {snapshot: {volumeSnapshotClassName: "a/b"}}`), "spec.target.snapshot.volumeSnapshotClassName"},

		// the Job template
		{"no jobTemplate for a volume", `
spec:
  schedule: "@daily"
  source: {persistentVolumeClaimName: data}`, "spec.jobTemplate: Required value: jobTemplate is required with a volume target"},
		{"a jobTemplate for a snapshot", backupJobWith("target: {snapshot: {}}"), "spec.jobTemplate: Forbidden: a snapshot target takes no jobTemplate"},
		{"a jobTemplate for a PostgresCluster", strings.Replace(minimalBackupJob, "persistentVolumeClaimName: data", "postgresCluster: db", 1),
			"spec.jobTemplate: Forbidden: a postgresCluster source takes no jobTemplate"},
		{"jobTemplate without a pod", strings.SplitAfter(minimalBackupJob, "jobTemplate:")[0] + " {metadata: {labels: {a: b}}}\n", "spec.jobTemplate: Required value: jobTemplate.spec.template.spec is required"},
		{"hostNetwork", backupJobWithPod("hostNetwork: true"), pod + "hostNetwork"},
		{"hostPID", backupJobWithPod("hostPID: true"), pod + "hostPID"},
		{"hostIPC", backupJobWithPod("hostIPC: true"), pod + "hostIPC"},
		{"hostPath volume", backupJobWithPod("volumes: [{name: scratch, emptyDir: {}}, {name: root, hostPath: {path: /}}]"), pod + "volumes: Forbidden: may not contain hostPath"},
		{"volume named source", backupJobWithPod("volumes: [{name: source, emptyDir: {}}]"), pod + "volumes: Forbidden: may not contain volumes named source"},
		{"volume named backup", backupJobWithPod("volumes: [{name: backup, persistentVolumeClaim: {claimName: other}}]"), pod + "volumes: Forbidden: may not contain volumes named source"},
		{"privileged container", strings.Replace(minimalBackupJob, "command:", "securityContext: {privileged: true}, command:", 1), pod + "containers"},
		{"host-process container", strings.Replace(minimalBackupJob, "command:", "securityContext: {windowsOptions: {hostProcess: true}}, command:", 1), pod + "containers"},
		{"privileged init container", backupJobWithPod("initContainers: [{name: init, image: busybox, securityContext: {privileged: true}}]"), pod + "initContainers"},
		{"host-process pod", backupJobWithPod("securityContext: {windowsOptions: {hostProcess: true}}"), pod + "securityContext.windowsOptions.hostProcess"},
		{"another ServiceAccount", backupJobWithPod("serviceAccountName: cluster-admin"), pod + "serviceAccountName"},
		{"another ServiceAccount, deprecated field", backupJobWithPod("serviceAccount: cluster-admin"), pod + "serviceAccountName"},
		{"ephemeral containers", backupJobWithPod("ephemeralContainers: [{name: debug, image: busybox}]"), pod + "ephemeralContainers"},
		// the restricted Pod Security Standard, as far as the rules see it
		{"nodeName", backupJobWithPod("nodeName: control-plane-1"), pod + "nodeName: Forbidden"},
		{"runtimeClassName", backupJobWithPod("runtimeClassName: runc"), pod + "runtimeClassName: Forbidden"},
		{"control-plane nodeSelector", backupJobWithPod(`nodeSelector: {"node-role.kubernetes.io/control-plane": ""}`), pod + "nodeSelector: Forbidden"},
		{"pod runAsNonRoot false", backupJobWithPod("securityContext: {runAsNonRoot: false}"), pod + "securityContext.runAsNonRoot: Forbidden"},
		{"pod runAsUser 0", backupJobWithPod("securityContext: {runAsUser: 0}"), pod + "securityContext.runAsUser: Forbidden"},
		{"pod seccomp Unconfined", backupJobWithPod("securityContext: {seccompProfile: {type: Unconfined}}"), pod + "securityContext.seccompProfile.type: Forbidden"},
		{"pod AppArmor Unconfined", backupJobWithPod("securityContext: {appArmorProfile: {type: Unconfined}}"), pod + "securityContext.appArmorProfile.type: Forbidden"},
		{"pod SELinux user", backupJobWithPod("securityContext: {seLinuxOptions: {user: system_u}}"), pod + "securityContext.seLinuxOptions: Forbidden"},
		{"container as root", strings.Replace(minimalBackupJob, "command:", "securityContext: {runAsUser: 0}, command:", 1), pod + "containers: Forbidden: may not set securityContext.runAsNonRoot to false or securityContext.runAsUser to 0"},
		{"init container runAsNonRoot false", backupJobWithPod("initContainers: [{name: init, image: busybox, securityContext: {runAsNonRoot: false}}]"), pod + "initContainers: Forbidden: may not set securityContext.runAsNonRoot"},
		{"privilege escalation", strings.Replace(minimalBackupJob, "command:", "securityContext: {allowPrivilegeEscalation: true}, command:", 1), pod + "containers: Forbidden: may not set securityContext.allowPrivilegeEscalation"},
		{"nfs volume", backupJobWithPod("volumes: [{name: remote, nfs: {server: 10.0.0.1, path: /}}]"), pod + "volumes: Forbidden: may hold only"},
		{"iscsi volume", backupJobWithPod("volumes: [{name: remote, iscsi: {targetPortal: 10.0.0.1, iqn: iqn.2001-04.com.example:x, lun: 0}}]"), pod + "volumes: Forbidden: may hold only"},
		{"rbd volume", backupJobWithPod("volumes: [{name: remote, rbd: {monitors: [10.0.0.1], image: x}}]"), pod + "volumes: Forbidden: may hold only"},
		{"flexVolume", backupJobWithPod("volumes: [{name: remote, flexVolume: {driver: example/x}}]"), pod + "volumes: Forbidden: may hold only"},
		{"inline csi volume", backupJobWithPod("volumes: [{name: remote, csi: {driver: nfs.csi.k8s.io}}]"), pod + "volumes: Forbidden: may hold only"},
		// labels and annotations the operator reads as its own
		{"drill label on the Job", strings.Replace(minimalBackupJob, "  jobTemplate:\n", "  jobTemplate:\n    metadata: {labels: {example.com/drill: nightly-1}}\n", 1), "spec.jobTemplate.metadata.labels: Forbidden"},
		{"managed-by label on the Job", strings.Replace(minimalBackupJob, "  jobTemplate:\n", "  jobTemplate:\n    metadata: {labels: {app.kubernetes.io/managed-by: platform-operator}}\n", 1), "spec.jobTemplate.metadata.labels: Forbidden"},
		{"result annotation on the Job", strings.Replace(minimalBackupJob, "  jobTemplate:\n", "  jobTemplate:\n    metadata: {annotations: {example.com/verified: Passed}}\n", 1), "spec.jobTemplate.metadata.annotations: Forbidden"},
		{"a Website's labels on the pod", strings.Replace(minimalBackupJob, "      template:\n", "      template:\n        metadata: {labels: {app.kubernetes.io/name: website, app.kubernetes.io/instance: shop}}\n", 1), "spec.jobTemplate.spec.template.metadata.labels: Forbidden"},
		{"BackupJob label on the pod", strings.Replace(minimalBackupJob, "      template:\n", "      template:\n        metadata: {labels: {example.com/backupjob: other}}\n", 1), "spec.jobTemplate.spec.template.metadata.labels: Forbidden"},
		{"run annotation on the pod", strings.Replace(minimalBackupJob, "      template:\n", "      template:\n        metadata: {annotations: {example.com/run: x}}\n", 1), "spec.jobTemplate.spec.template.metadata.annotations: Forbidden"},
		{"verify template as root", backupJobWith(`
verify:
  jobTemplate:
    spec:
      template:
        spec:
          securityContext: {runAsUser: 0}
          containers: [{name: check, image: busybox}]`), "spec.verify.jobTemplate.spec.template.spec.securityContext.runAsUser"},
		{"verify template on the host network", backupJobWith(`
verify:
  jobTemplate:
    spec:
      template:
        spec:
          hostNetwork: true
          containers: [{name: check, image: busybox}]`), "spec.verify.jobTemplate.spec.template.spec.hostNetwork"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := c.Create(t.Context(), backupJob(t, fmt.Sprintf("refused-%d", i), tt.body))
			g.Expect(err).To(HaveOccurred())
			t.Log(err)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want 422 Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.field))
		})
	}
}

func testBackupJobNames(t *testing.T, c client.Client) {
	g := NewWithT(t)
	g.Expect(c.Create(t.Context(), backupJob(t, strings.Repeat("a", 52), minimalBackupJob))).To(Succeed())
	for _, name := range []string{strings.Repeat("a", 53), "1backup", "nightly.db"} {
		err := c.Create(t.Context(), backupJob(t, name, minimalBackupJob))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", name, err)
		g.Expect(err.Error()).To(ContainSubstring("metadata.name"), name)
	}
}

// The status the operator will write fits the schema: enums, bounds and
// the list keys.
func testBackupJobStatus(t *testing.T, c client.Client) {
	g := NewWithT(t)
	obj := backupJob(t, "status", minimalBackupJob)
	g.Expect(c.Create(t.Context(), obj)).To(Succeed())
	status := map[string]any{}
	g.Expect(yaml.Unmarshal([]byte(`
observedGeneration: 1
lastScheduleTime: "2026-11-30T02:30:00Z"
lastMissedTime: "2026-11-29T02:30:00Z"
nextScheduleTime: "2026-12-01T02:30:00Z"
lastSuccessfulTime: "2026-11-30T02:31:10Z"
missedRuns: 3
lastRunNow: "now"
backupCount: 2
active: [{kind: Job, namespace: default, name: status-1764469800}]
backups:
- {name: status-1764469800, kind: Volume, scheduledTime: "2026-11-30T02:30:00Z", result: Running}
- {name: status-1764383400, kind: Volume, scheduledTime: "2026-11-29T02:30:00Z", result: Succeeded, size: 10Gi, verified: Passed, keptBy: [NewestSuccessful, Last, Daily]}
conditions:
- {type: Ready, status: "True", reason: Running, message: "", lastTransitionTime: "2026-11-30T02:30:00Z"}
`), &status)).To(Succeed())
	obj.Object["status"] = status
	g.Expect(c.Status().Update(t.Context(), obj)).To(Succeed())

	status["backups"].([]any)[1].(map[string]any)["keptBy"] = []any{"Hourly"}
	obj.Object["status"] = status
	err := c.Status().Update(t.Context(), obj)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("status.backups[1].keptBy[0]"))
}
