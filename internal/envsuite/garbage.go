package envsuite

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CollectGarbage deletes, in namespace ns, what the garbage collector would
// once the owner of uid is gone: the objects it owns, of the types a
// PostgresCluster makes. The suite's API server runs no controller
// manager, so a test that deletes an owner and makes another of the name
// collects them itself.
func (s *Suite) CollectGarbage(ctx context.Context, ns string, uid types.UID) error {
	for _, list := range []client.ObjectList{&corev1.PodList{}, &corev1.SecretList{}, &corev1.ServiceList{}, &corev1.ServiceAccountList{},
		&rbacv1.RoleList{}, &rbacv1.RoleBindingList{}, &policyv1.PodDisruptionBudgetList{}, &coordinationv1.LeaseList{},
		&networkingv1.NetworkPolicyList{}} {
		if err := s.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			return fmt.Errorf("list %T: %w", list, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return fmt.Errorf("read %T: %w", list, err)
		}
		for _, item := range items {
			obj := item.(client.Object)
			for _, ref := range obj.GetOwnerReferences() {
				if ref.UID != uid {
					continue
				}
				if err := s.Client.Delete(ctx, obj, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("delete %s: %w", obj.GetName(), err)
				}
			}
		}
	}
	return nil
}
