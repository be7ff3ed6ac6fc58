package postgrescluster

import (
	"encoding/json"
	"net/url"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

func testCluster() *v1alpha1.PostgresCluster {
	return &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: types.UID("uid-db")},
		Spec: v1alpha1.PostgresClusterSpec{Instances: 3, Image: "postgres:15",
			Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
}

var testPodOptions = PodOptions{InstanceImage: "example.com/platform-operator:v1", ClusterDomain: "cluster.local"}

// A pet: named CLUSTER-N, reachable through the headless Service by its
// hostname, on its own claim, run by the instance manager as PID 1, with the
// restricted Pod Security Standard as the API server's own code judges it.
func TestInstancePod(t *testing.T) {
	g := NewWithT(t)
	pod := DesiredPod(testCluster(), 2, testPodOptions)
	g.Expect(pod.Name).To(Equal("db-2"))
	g.Expect(pod.Spec.Hostname).To(Equal("db-2"))
	g.Expect(pod.Spec.Subdomain).To(Equal("db"))
	g.Expect(pod.Spec.ServiceAccountName).To(Equal("db-instance"))
	g.Expect(pod.Labels).To(HaveKeyWithValue(v1alpha1.PostgresClusterLabel, "db"))
	g.Expect(pod.Labels).To(HaveKeyWithValue(v1alpha1.PostgresInstanceLabel, "db-2"))
	g.Expect(pod.Labels).NotTo(HaveKey(v1alpha1.PostgresRoleLabel), "the role is routing, set by the operator as it decides")
	g.Expect(pod.OwnerReferences).To(HaveLen(1))
	g.Expect(pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("db-2"))
	g.Expect(pod.Spec.Containers[0].Command).To(Equal([]string{"/controller/manager", "instance", "run"}))
	g.Expect(pod.Spec.Containers[0].Image).To(Equal("postgres:15"))
	g.Expect(pod.Spec.InitContainers[0].Image).To(Equal("example.com/platform-operator:v1"))

	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	for _, result := range evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
		g.Expect(result.Allowed).To(BeTrue(), result.ForbiddenReason+": "+result.ForbiddenDetail)
	}
}

// The spec hash tells a pod of an older spec: an image or resources change
// it, the instance's ordinal or a role does not enter it.
func TestPodHashFollowsTheSpec(t *testing.T) {
	g := NewWithT(t)
	pg := testCluster()
	before := DesiredPod(pg, 1, testPodOptions).Annotations[SpecHashAnnotation]
	g.Expect(DesiredPod(pg, 1, testPodOptions).Annotations[SpecHashAnnotation]).To(Equal(before), "stable")
	pg.Spec.Image = "postgres:15.9"
	g.Expect(DesiredPod(pg, 1, testPodOptions).Annotations[SpecHashAnnotation]).NotTo(Equal(before))
	pg.Spec.Image = "postgres:15"
	pg.Spec.Instances = 5
	g.Expect(DesiredPod(pg, 1, testPodOptions).Annotations[SpecHashAnnotation]).To(Equal(before), "the number of instances is no change of a pod")

	// A rolling restart asked: every new value is a change of every pod.
	pg.Annotations = map[string]string{v1alpha1.PostgresRestartedAtAnnotation: "2026-12-07T14:00:00Z"}
	restarted := DesiredPod(pg, 1, testPodOptions)
	g.Expect(restarted.Annotations[SpecHashAnnotation]).NotTo(Equal(before), "a restart asked")
	g.Expect(restarted.Annotations).To(HaveKeyWithValue(v1alpha1.PostgresRestartedAtAnnotation, "2026-12-07T14:00:00Z"))
	g.Expect(restarted.Spec).To(Equal(DesiredPod(testCluster(), 1, testPodOptions).Spec), "the pod itself is the same")
	pg.Annotations[v1alpha1.PostgresRestartedAtAnnotation] = "2026-12-07T15:00:00Z"
	g.Expect(DesiredPod(pg, 1, testPodOptions).Annotations[SpecHashAnnotation]).NotTo(Equal(restarted.Annotations[SpecHashAnnotation]), "a second restart asked")
}

// The claim holds the data: no owner reference, so no cascade deletes it.
func TestClaimIsLabelledNotOwned(t *testing.T) {
	g := NewWithT(t)
	claim := DesiredClaim(testCluster(), 3)
	g.Expect(claim.Name).To(Equal("db-3"))
	g.Expect(claim.OwnerReferences).To(BeEmpty())
	g.Expect(claim.Labels).To(HaveKeyWithValue(v1alpha1.PostgresClusterLabel, "db"))
	g.Expect(claim.Spec.Resources.Requests.Storage().String()).To(Equal("1Gi"))
}

// The application's Secret holds what a client needs, with the password
// escaped where a URI needs it.
func TestApplicationSecret(t *testing.T) {
	g := NewWithT(t)
	s := DesiredAppSecret(testCluster(), "pa55word", "cluster.local", []byte("CA PEM"))
	g.Expect(s.Name).To(Equal("db-app"))
	g.Expect(s.Type).To(Equal(corev1.SecretTypeBasicAuth))
	g.Expect(s.StringData).To(Equal(map[string]string{
		"username": "app", "password": "pa55word", "host": "db-rw.shop.svc.cluster.local", "port": "5432", "dbname": "app",
		"uri":      "postgresql://app:pa55word@db-rw.shop.svc.cluster.local:5432/app?sslmode=verify-full",
		"jdbc-uri": "jdbc:postgresql://db-rw.shop.svc.cluster.local:5432/app?password=pa55word&sslmode=verify-full&user=app",
		"ca.crt":   "CA PEM",
	}))

	// A cluster restored from a backup: the owner and database the backup
	// holds, not app.
	restored := testCluster()
	restored.Spec.Bootstrap = &v1alpha1.PostgresBootstrap{FromBackup: &v1alpha1.PostgresFromBackup{BackupJob: "nightly", Owner: "shop", Database: "orders"}}
	s = DesiredAppSecret(restored, "pa55word", "cluster.local", nil)
	g.Expect(s.StringData).To(HaveKeyWithValue("username", "shop"))
	g.Expect(s.StringData).To(HaveKeyWithValue("dbname", "orders"))

	keys := connectionKeys("app", "p@ss/w:rd", "h", "app")
	u, err := url.Parse(keys[URIKey])
	g.Expect(err).NotTo(HaveOccurred())
	password, _ := u.User.Password()
	g.Expect(password).To(Equal("p@ss/w:rd"))
}

func TestGeneratedPasswordsDiffer(t *testing.T) {
	g := NewWithT(t)
	a, err := newPassword()
	g.Expect(err).NotTo(HaveOccurred())
	b, _ := newPassword()
	g.Expect(a).To(HaveLen(32))
	g.Expect(a).NotTo(Equal(b))
	g.Expect(a).To(MatchRegexp("^[A-Za-z0-9]+$"))
}

// The instance managers may touch only their own cluster's objects, by
// name.
func TestInstanceRoleIsLimitedByName(t *testing.T) {
	g := NewWithT(t)
	data, err := json.Marshal(DesiredRole(testCluster()))
	g.Expect(err).NotTo(HaveOccurred())
	role := &rbacv1.Role{}
	g.Expect(json.Unmarshal(data, role)).To(Succeed())
	g.Expect(role.Rules).NotTo(BeEmpty())
	for _, rule := range role.Rules {
		g.Expect(rule.ResourceNames).NotTo(BeEmpty(), "rule on %v", rule.Resources)
		g.Expect(rule.Verbs).NotTo(ContainElements("create", "delete", "*"))
	}
	g.Expect(role.Rules[2].ResourceNames).To(ConsistOf("db-app", "db-superuser", "db-replication", "db-backup", "db-server"),
		"the server certificate's Secret, never the CA's key")
}

// The instance managers may patch only the pods of their cluster's own
// instances, CLUSTER-1 to CLUSTER-spec.instances, and those beyond it that
// still run while a scale-down completes: never another name of the
// pattern, which another application's pod may hold in the namespace.
func TestInstanceRolePodsAreTheClustersInstances(t *testing.T) {
	withStatus := func(instances int32, status v1alpha1.PostgresClusterStatus) *v1alpha1.PostgresCluster {
		pg := testCluster()
		pg.Spec.Instances = instances
		pg.Status = status
		return pg
	}
	members := func(names ...string) []v1alpha1.PostgresInstanceStatus {
		var out []v1alpha1.PostgresInstanceStatus
		for _, n := range names {
			out = append(out, v1alpha1.PostgresInstanceStatus{Name: n})
		}
		return out
	}
	tests := []struct {
		name string
		pg   *v1alpha1.PostgresCluster
		want []string
	}{
		{"one instance", withStatus(1, v1alpha1.PostgresClusterStatus{}), []string{"db-1"}},
		{"three instances, new", withStatus(3, v1alpha1.PostgresClusterStatus{}), []string{"db-1", "db-2", "db-3"}},
		{"scaled up: the new instances before their pods", withStatus(5, v1alpha1.PostgresClusterStatus{Instances: members("db-1", "db-2", "db-3")}),
			[]string{"db-1", "db-2", "db-3", "db-4", "db-5"}},
		{"scaled down: the leaving pods still report", withStatus(2, v1alpha1.PostgresClusterStatus{Instances: members("db-1", "db-2", "db-3", "db-4")}),
			[]string{"db-1", "db-2", "db-3", "db-4"}},
		{"scaled down: the primary beyond spec.instances hands over", withStatus(1, v1alpha1.PostgresClusterStatus{CurrentPrimary: "db-3", TargetPrimary: "db-3"}),
			[]string{"db-1", "db-2", "db-3"}},
		{"scaled down and gone", withStatus(2, v1alpha1.PostgresClusterStatus{Instances: members("db-1", "db-2"), CurrentPrimary: "db-1"}),
			[]string{"db-1", "db-2"}},
		{"names of no instance of its own are ignored", withStatus(2, v1alpha1.PostgresClusterStatus{Instances: members("db-1", "db-2", "other-7", "db-x"),
			CurrentPrimary: "db-10"}), []string{"db-1", "db-2"}},
		{"unset instances still names one pod, never all", withStatus(0, v1alpha1.PostgresClusterStatus{}), []string{"db-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data, err := json.Marshal(DesiredRole(tt.pg))
			g.Expect(err).NotTo(HaveOccurred())
			role := &rbacv1.Role{}
			g.Expect(json.Unmarshal(data, role)).To(Succeed())
			var pods []string
			for _, rule := range role.Rules {
				if slices.Contains(rule.Resources, "pods") {
					pods = append(pods, rule.ResourceNames...)
				}
			}
			g.Expect(pods).To(Equal(tt.want))
		})
	}
}

// CLUSTER-rw selects the pod labelled primary, CLUSTER-ro those labelled
// replica, the headless Service every instance, ready or not.
func TestServices(t *testing.T) {
	g := NewWithT(t)
	pg := testCluster()
	decodeService := func(config any) *corev1.Service {
		data, err := json.Marshal(config)
		g.Expect(err).NotTo(HaveOccurred())
		s := &corev1.Service{}
		g.Expect(json.Unmarshal(data, s)).To(Succeed())
		return s
	}
	rw := decodeService(desiredRoleService(pg, pgspec.WriteService(pg.Name), v1alpha1.PostgresPrimaryRole))
	g.Expect(rw.Name).To(Equal("db-rw"))
	g.Expect(rw.Spec.Selector).To(Equal(map[string]string{v1alpha1.PostgresClusterLabel: "db", v1alpha1.PostgresRoleLabel: "primary"}))
	headless := decodeService(desiredHeadlessService(pg))
	g.Expect(headless.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(headless.Spec.PublishNotReadyAddresses).To(BeTrue())
	g.Expect(headless.Spec.Selector).To(Equal(map[string]string{v1alpha1.PostgresClusterLabel: "db"}))
}
