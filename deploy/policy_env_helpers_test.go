package deploy_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The API server serves a new CRD, and enforces a new admission policy, a
// moment after its creation: the tests wait this long for either.
const settleTimeout = 30 * time.Second

// install creates, as the administrator, every object of the files
// (paths under deploy/).
func (e *policyEnv) install(t *testing.T, files ...string) {
	t.Helper()
	for _, file := range files {
		for _, obj := range readObjects(t, file) {
			if err := e.admin.Create(t.Context(), obj); err != nil {
				t.Fatalf("%s: create %s %s: %v", file, obj.GetKind(), obj.GetName(), err)
			}
		}
	}
}

// createNamespaces creates the namespaces, unlabelled, as the
// administrator.
func (e *policyEnv) createNamespaces(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := e.admin.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
			t.Fatalf("create namespace %s: %v", name, err)
		}
	}
}

// createOnceServed creates obj as the administrator once its kind, of a
// CRD just installed, is served.
func (e *policyEnv) createOnceServed(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func() error { return e.admin.Create(t.Context(), obj) }).
		WithTimeout(settleTimeout).Should(Succeed(), "create %s once its kind is served", obj.GetName())
}

// grantJane gives jane, in namespace ns, the rules as the Role name.
func (e *policyEnv) grantJane(t *testing.T, ns, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(e.admin.Create(t.Context(), &rbacv1.Role{ObjectMeta: meta(ns, name, nil), Rules: rules})).To(Succeed())
	g.Expect(e.admin.Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: meta(ns, "jane-"+name, nil),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "jane"}},
	})).To(Succeed())
}

// waitInForce calls probe, a request the policy named refuses, until it
// does.
func waitInForce(t *testing.T, policy string, probe func() error) {
	t.Helper()
	NewWithT(t).Eventually(probe).WithTimeout(settleTimeout).
		Should(MatchError(ContainSubstring(policy)), "policy %s is in force", policy)
}

// expectForbidden fails the test unless err is a 403 Forbidden whose
// message holds each of the parts (a policy's name, a rule and its
// message).
func expectForbidden(t *testing.T, err error, what string, parts ...string) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(err).To(HaveOccurred(), "%s: admitted", what)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: want 403 Forbidden, got %v", what, err)
	for _, part := range parts {
		g.Expect(err).To(MatchError(ContainSubstring(part)), what)
	}
}
