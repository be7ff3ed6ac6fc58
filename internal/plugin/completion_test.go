package plugin

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// Completion, as kubectl_complete-platform asks for it (cobra's
// __complete), offers the names of the kind the command takes, of the
// namespace given, and nothing for the later arguments.
func TestCompletionOffersNames(t *testing.T) {
	other := inShop(cluster(nil))
	other.Name = "orders"
	elsewhere := cluster(nil)
	elsewhere.Name, elsewhere.Namespace = "theirs", "other"
	bj := &v1alpha1.BackupJob{ObjectMeta: metav1.ObjectMeta{Name: "db-nightly", Namespace: "shop"}}
	objs := []client.Object{inShop(cluster(nil)), other, elsewhere, bj}

	out, _, err := run(t, objs, "__complete", "pg", "status", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "db\n") || !strings.Contains(out, "orders\n") || strings.Contains(out, "theirs") || strings.Contains(out, "db-nightly") {
		t.Errorf("pg status completes to:\n%s\nwant db and orders only", out)
	}
	if out, _, _ := run(t, objs, "__complete", "bj", "list", ""); !strings.Contains(out, "db-nightly\n") {
		t.Errorf("bj list completes to:\n%s", out)
	}
	if out, _, _ := run(t, objs, "__complete", "pg", "fence", "db", ""); strings.Contains(out, "orders") {
		t.Errorf("the instance argument completes to cluster names:\n%s", out)
	}
}
