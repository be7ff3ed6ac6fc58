package tenant

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/kit/kstatustest"
)

var statusNow = issued.Add(time.Hour)

// goodObservation is what a Tenant with two namespaces, one owner and
// credentials sees once everything is in place.
func goodObservation() observation {
	subjects := []tenantv1.TenantSubject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}
	return observation{
		namespaces: []namespaceObservation{
			{name: "team-a", phase: tenantv1.NamespaceActive, role: "admin", subjects: subjects},
			{name: "team-a-dev", phase: tenantv1.NamespaceActive, role: "admin", subjects: subjects},
		},
		serviceAccountHeld: true,
		credentials: credentialObservation{requested: true, secretName: "tenant-kubeconfig",
			token: &issuedToken{issuedAt: issued, expiresAt: issued.Add(24 * time.Hour), expiration: 24 * time.Hour}},
	}
}

type conditionWant struct {
	status metav1.ConditionStatus
	reason string
}

func TestComputeStatusConditions(t *testing.T) {
	tests := []struct {
		name   string
		tenant *tenantv1.Tenant
		obs    func(*observation)
		want   map[string]conditionWant
		// kstatus, when set, is what Flux, Argo CD and kubectl wait make
		// of it.
		kstatus status.Status
	}{
		{
			name:    "everything in place",
			kstatus: status.CurrentStatus,
			tenant:  testTenant(withCredentials),
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:            {"True", tenantv1.TenantActiveReason},
				tenantv1.TenantNamespacesReadyCondition:  {"True", tenantv1.NamespacesActiveReason},
				tenantv1.TenantAccessReadyCondition:      {"True", tenantv1.AccessGrantedReason},
				tenantv1.TenantCredentialsReadyCondition: {"True", tenantv1.CredentialsIssuedReason},
				tenantv1.TenantDegradedCondition:         {"False", tenantv1.TenantAsExpectedReason},
			},
		},
		{
			name:    "a namespace removed from the spec could not be released",
			kstatus: status.InProgressStatus,
			tenant:  testTenant(withCredentials),
			obs: func(o *observation) {
				o.notReleased = problem(tenantv1.TenantApplyFailedReason, "release namespace team-a-old: admission webhook denied the request")
			},
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:           {"False", tenantv1.TenantApplyFailedReason},
				tenantv1.TenantNamespacesReadyCondition: {"False", tenantv1.TenantApplyFailedReason},
				tenantv1.TenantDegradedCondition:        {"True", tenantv1.TenantApplyFailedReason},
			},
		},
		{
			name:    "a namespace held by someone else",
			kstatus: status.FailedStatus,
			tenant:  testTenant(withCredentials),
			obs: func(o *observation) {
				o.namespaces[1] = namespaceObservation{name: "team-a-dev", phase: tenantv1.NamespaceConflict, message: "Namespace team-a-dev is held by Tenant team-b"}
			},
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:           {"False", tenantv1.NamespaceConflictReason},
				tenantv1.TenantNamespacesReadyCondition: {"False", tenantv1.NamespaceConflictReason},
				tenantv1.TenantAccessReadyCondition:     {"False", tenantv1.WaitingForNamespacesReason},
				tenantv1.TenantDegradedCondition:        {"True", tenantv1.NamespaceConflictReason},
			},
		},
		{
			name:    "a namespace terminating is no degradation",
			kstatus: status.InProgressStatus,
			tenant:  testTenant(),
			obs: func(o *observation) {
				o.namespaces[1] = namespaceObservation{name: "team-a-dev", phase: tenantv1.NamespaceTerminating, message: "terminating"}
			},
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:           {"False", tenantv1.NamespaceTerminatingReason},
				tenantv1.TenantNamespacesReadyCondition: {"False", tenantv1.NamespaceTerminatingReason},
				tenantv1.TenantDegradedCondition:        {"False", tenantv1.TenantAsExpectedReason},
			},
		},
		{
			name:   "suspended",
			tenant: testTenant(withCredentials, func(t *tenantv1.Tenant) { t.Spec.Suspend = true }),
			obs: func(o *observation) {
				o.credentials.token = nil
				for i := range o.namespaces {
					o.namespaces[i].role, o.namespaces[i].subjects = "", nil
				}
			},
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:            {"False", tenantv1.TenantSuspendedReason},
				tenantv1.TenantNamespacesReadyCondition:  {"True", tenantv1.NamespacesActiveReason},
				tenantv1.TenantAccessReadyCondition:      {"False", tenantv1.TenantSuspendedReason},
				tenantv1.TenantCredentialsReadyCondition: {"False", tenantv1.TenantSuspendedReason},
				tenantv1.TenantDegradedCondition:         {"False", tenantv1.TenantAsExpectedReason},
			},
		},
		{
			name:    "owner role not allowed",
			kstatus: status.FailedStatus,
			tenant:  testTenant(func(t *tenantv1.Tenant) { t.Spec.OwnerRole = "cluster-admin" }),
			obs:     func(o *observation) { o.roleNotAllowed = true },
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:       {"False", tenantv1.OwnerRoleNotAllowedReason},
				tenantv1.TenantAccessReadyCondition: {"False", tenantv1.OwnerRoleNotAllowedReason},
				tenantv1.TenantDegradedCondition:    {"True", tenantv1.OwnerRoleNotAllowedReason},
			},
		},
		{
			name:   "a ServiceAccount of the name someone else made",
			tenant: testTenant(withCredentials),
			obs: func(o *observation) {
				squatted := problem(tenantv1.ServiceAccountConflictReason, "ServiceAccount team-a/tenant (spec.serviceAccount.name) is not bound")
				o.serviceAccount, o.serviceAccountHeld = squatted, false
				o.credentials = credentialObservation{requested: true, secretName: "tenant-kubeconfig", problem: squatted}
			},
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:            {"False", tenantv1.ServiceAccountConflictReason},
				tenantv1.TenantAccessReadyCondition:      {"False", tenantv1.ServiceAccountConflictReason},
				tenantv1.TenantCredentialsReadyCondition: {"False", tenantv1.ServiceAccountConflictReason},
				tenantv1.TenantDegradedCondition:         {"True", tenantv1.ServiceAccountConflictReason},
			},
		},
		{
			name: "a Tenant stored with the ServiceAccount default, before the CRD refused it",
			tenant: testTenant(withCredentials, func(t *tenantv1.Tenant) {
				t.Spec.ServiceAccount.Name = "default"
			}),
			obs: func(o *observation) {
				refused := serviceAccountNotAllowed(testTenant(func(t *tenantv1.Tenant) {
					t.Spec.ServiceAccount = &tenantv1.TenantServiceAccount{Name: "default"}
				}))
				o.serviceAccount, o.serviceAccountHeld = refused, false
				o.credentials = credentialObservation{requested: true, secretName: "tenant-kubeconfig", problem: refused}
			},
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:            {"False", tenantv1.ServiceAccountNotAllowedReason},
				tenantv1.TenantAccessReadyCondition:      {"False", tenantv1.ServiceAccountNotAllowedReason},
				tenantv1.TenantCredentialsReadyCondition: {"False", tenantv1.ServiceAccountNotAllowedReason},
				tenantv1.TenantDegradedCondition:         {"True", tenantv1.ServiceAccountNotAllowedReason},
			},
		},
		{
			name:   "an access object in the way",
			tenant: testTenant(),
			obs: func(o *observation) {
				o.namespaces[0].access = problem(tenantv1.AccessConflictReason, "ResourceQuota tenant-quota already exists")
			},
			want: map[string]conditionWant{
				tenantv1.TenantAccessReadyCondition: {"False", tenantv1.AccessConflictReason},
				tenantv1.TenantDegradedCondition:    {"True", tenantv1.AccessConflictReason},
			},
		},
		{
			name:   "credentials not asked for",
			tenant: testTenant(),
			obs:    func(o *observation) { o.credentials = credentialObservation{} },
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:            {"True", tenantv1.TenantActiveReason},
				tenantv1.TenantCredentialsReadyCondition: {"True", tenantv1.CredentialsNotRequestedReason},
			},
		},
		{
			name:   "token expired (the operator was down)",
			tenant: testTenant(withCredentials),
			obs: func(o *observation) {
				o.credentials.token = &issuedToken{issuedAt: issued.Add(-48 * time.Hour), expiresAt: issued.Add(-24 * time.Hour)}
			},
			want: map[string]conditionWant{
				tenantv1.TenantReadyCondition:            {"False", tenantv1.TenantProgressingReason},
				tenantv1.TenantCredentialsReadyCondition: {"False", tenantv1.TenantProgressingReason},
				tenantv1.TenantDegradedCondition:         {"False", tenantv1.TenantAsExpectedReason},
			},
		},
		{
			name:   "credentials Secret in the way",
			tenant: testTenant(withCredentials),
			obs: func(o *observation) {
				o.credentials.token = nil
				o.credentials.problem = secretConflict(keyOf("team-a", "tenant-kubeconfig"))
			},
			want: map[string]conditionWant{
				tenantv1.TenantCredentialsReadyCondition: {"False", tenantv1.CredentialsConflictReason},
				tenantv1.TenantDegradedCondition:         {"True", tenantv1.CredentialsConflictReason},
			},
		},
		{
			name:   "home namespace not held",
			tenant: testTenant(withCredentials),
			obs: func(o *observation) {
				o.namespaces[0] = namespaceObservation{name: "team-a", phase: tenantv1.NamespaceConflict, message: "exists"}
				o.credentials = credentialObservation{requested: true, waitingForHome: true}
			},
			want: map[string]conditionWant{
				tenantv1.TenantCredentialsReadyCondition: {"False", tenantv1.WaitingForHomeReason},
				tenantv1.TenantDegradedCondition:         {"True", tenantv1.NamespaceConflictReason},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obs := goodObservation()
			if tt.obs != nil {
				tt.obs(&obs)
			}
			status := computeStatus(tt.tenant, obs, statusNow)
			g.Expect(status.Conditions).To(HaveLen(7), "always all seven")
			for _, c := range status.Conditions {
				g.Expect(c.ObservedGeneration).To(Equal(int64(3)))
				g.Expect(c.Message).NotTo(BeEmpty(), c.Type)
			}
			for typ, want := range tt.want {
				c := meta.FindStatusCondition(status.Conditions, typ)
				g.Expect(c).NotTo(BeNil(), typ)
				g.Expect(conditionWant{c.Status, c.Reason}).To(Equal(want), "%s: %s", typ, c.Message)
			}
			if tt.kstatus != "" {
				tn := tt.tenant.DeepCopy()
				tn.Status = status
				got, message := kstatustest.Of(t, tn)
				g.Expect(got).To(Equal(tt.kstatus), message)
			}
		})
	}
}

func TestComputeStatusReportsWhatIsGranted(t *testing.T) {
	g := NewWithT(t)
	obs := goodObservation()
	obs.namespaces[1].access = problem(tenantv1.TenantApplyFailedReason, "forbidden")
	obs.quotas = []corev1.ResourceQuota{
		{Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceRequestsCPU: resource.MustParse("2")},
		}, Status: corev1.ResourceQuotaStatus{
			Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3"), corev1.ResourceRequestsCPU: resource.MustParse("500m")},
		}},
		{Spec: corev1.ResourceQuotaSpec{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceRequestsCPU: resource.MustParse("2")},
		}, Status: corev1.ResourceQuotaStatus{
			Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1"), corev1.ResourceRequestsCPU: resource.MustParse("250m")},
		}},
	}

	status := computeStatus(testTenant(withCredentials), obs, statusNow)

	g.Expect(status.Ready).To(Equal("1/2"))
	g.Expect(status.Namespaces).To(HaveLen(2))
	g.Expect(status.Namespaces[0]).To(Equal(tenantv1.TenantNamespaceStatus{Name: "team-a", Phase: tenantv1.NamespaceActive, Role: "admin",
		Subjects: []tenantv1.TenantSubject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"}}}))
	g.Expect(status.Namespaces[1].Phase).To(Equal(tenantv1.NamespaceFailed))
	g.Expect(status.Namespaces[1].Message).To(Equal("forbidden"))

	g.Expect(status.Quota.Hard.Pods().String()).To(Equal("20"))
	g.Expect(status.Quota.Used.Pods().String()).To(Equal("4"))
	g.Expect(status.Quota.Used.Name(corev1.ResourceRequestsCPU, resource.DecimalSI).String()).To(Equal("750m"))

	g.Expect(status.Credentials.SecretName).To(Equal("tenant-kubeconfig"))
	g.Expect(status.Credentials.IssuedAt.Time).To(BeTemporally("==", issued))
	g.Expect(status.Credentials.ExpiresAt.Time).To(BeTemporally("==", issued.Add(24*time.Hour)))
}

func TestComputeStatusKeepsTransitionTimes(t *testing.T) {
	g := NewWithT(t)
	tn := testTenant()
	first := computeStatus(tn, goodObservation(), statusNow)
	tn.Status = first

	later := computeStatus(tn, goodObservation(), statusNow.Add(time.Hour))
	g.Expect(later.Conditions).To(Equal(first.Conditions), "nothing changed, nothing moves")

	obs := goodObservation()
	obs.roleNotAllowed = true
	changed := computeStatus(tn, obs, statusNow.Add(time.Hour))
	g.Expect(meta.FindStatusCondition(changed.Conditions, tenantv1.TenantAccessReadyCondition).LastTransitionTime.Time).
		To(BeTemporally("==", statusNow.Add(time.Hour).Truncate(time.Second)))
	g.Expect(meta.FindStatusCondition(changed.Conditions, tenantv1.TenantNamespacesReadyCondition).LastTransitionTime).
		To(Equal(meta.FindStatusCondition(first.Conditions, tenantv1.TenantNamespacesReadyCondition).LastTransitionTime))
}

func TestOffboardingStatusNamesWhatANamespaceWaitsFor(t *testing.T) {
	g := NewWithT(t)
	tn := testTenant()
	tn.Status = computeStatus(tn, goodObservation(), statusNow)
	terminating := []namespaceObservation{{name: "team-a", phase: tenantv1.NamespaceTerminating, conditions: []corev1.NamespaceCondition{
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: pods. has 2 resource instances"},
	}}}

	status := computeOffboardingStatus(tn, terminating, statusNow.Add(time.Minute), statusNow)

	ready := meta.FindStatusCondition(status.Conditions, tenantv1.TenantReadyCondition)
	g.Expect(ready.Reason).To(Equal(tenantv1.TenantDeletingReason))
	g.Expect(ready.Message).To(ContainSubstring("team-a (Some resources are remaining: pods. has 2 resource instances)"))
	g.Expect(status.Namespaces).To(HaveLen(1))
	g.Expect(status.Namespaces[0].Conditions).To(ConsistOf(HaveField("Reason", "SomeResourcesRemain")))
	g.Expect(status.Conditions).To(HaveLen(7))
}

func keyOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
