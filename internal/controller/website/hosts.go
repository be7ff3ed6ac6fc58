package website

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	websitev1 "example.com/platform-operator/api/v1"
)

// An Ingress host belongs to the namespace whose Website claimed it first:
// an ingress controller merges the rules of every Ingress for a host, so a
// Website of another namespace could otherwise take over a path (say
// /login) of a site it does not own. Websites of one namespace share a host
// freely, as they always did: the namespace is the unit of trust.

// An Ingress of no host is a catch-all: an ingress controller merges the
// rules of every such Ingress, of every namespace, into its default server,
// so it is claimed as a host of its own.

// websiteHostIndex keys a Website by its Ingress host, so that the Websites
// sharing a host are found without listing every Website.
const websiteHostIndex = "website.example.com/ingress-host"

// catchAllHost is the host key of an Ingress of every host. spec.ingress.host
// cannot be "*" (a wildcard has a domain after it), so no Website's host
// takes it for its own.
const catchAllHost = "*"

// ingressHost is the host w's Ingress would serve, catchAllHost for one of
// every host, or "" when w asks for no Ingress.
func ingressHost(w *websitev1.Website) string {
	switch {
	case w.Spec.Ingress == nil:
		return ""
	case w.Spec.Ingress.Host == "":
		return catchAllHost
	}
	return w.Spec.Ingress.Host
}

// refuseIngress is why w gets no Ingress whoever holds its host, or nil:
// an Ingress of every host where the operator makes none (refuseCatchAll).
func refuseIngress(w *websitev1.Website, refuseCatchAll bool) *cause {
	if !refuseCatchAll || ingressHost(w) != catchAllHost {
		return nil
	}
	return &cause{websitev1.InvalidSpecReason, field.Required(field.NewPath("spec", "ingress", "host"),
		"this cluster's operator makes no Ingress of every host (--allow-catch-all-ingress=false): name the host the site answers to").Error()}
}

// describeHost names a host key as a message does.
func describeHost(host string) string {
	if host == catchAllHost {
		return "the Ingress of every host (an empty spec.ingress.host)"
	}
	return "Ingress host " + host + " (spec.ingress.host)"
}

// claimsBefore tells whether a claimed its host before b: it was created
// earlier, or in the same second and sorts first by namespace and name, so
// that every reconcile, of either, decides alike.
func claimsBefore(a, b *websitev1.Website) bool {
	ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// hostHolder is the Website of another namespace that claimed w's Ingress
// host before w, the first of them, or nil when w may serve its host.
// sharers are Websites with the same host, w itself possibly among them.
func hostHolder(w *websitev1.Website, sharers []websitev1.Website) *websitev1.Website {
	host := ingressHost(w)
	if host == "" {
		return nil
	}
	var holder *websitev1.Website
	for i := range sharers {
		other := &sharers[i]
		if other.Namespace == w.Namespace || ingressHost(other) != host || !claimsBefore(other, w) {
			continue
		}
		if holder == nil || claimsBefore(other, holder) {
			holder = other
		}
	}
	return holder
}

// hostConflict is the cause reported by a Website whose host holder holds.
func hostConflict(w, holder *websitev1.Website) *cause {
	return &cause{websitev1.HostConflictReason, fmt.Sprintf(
		"%s is served by Website %s/%s of another namespace, which claimed it first; this Website gets no Ingress until that one gives the host up",
		describeHost(ingressHost(w)), holder.Namespace, holder.Name)}
}

// sharingHost lists, from the cache, the Websites of every namespace whose
// Ingress host is host. The objects are the cache's own: read, never
// changed.
func sharingHost(ctx context.Context, c client.Reader, host string) ([]websitev1.Website, error) {
	list := &websitev1.WebsiteList{}
	if err := c.List(ctx, list, client.MatchingFields{websiteHostIndex: host}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list Websites of Ingress host %s: %w", host, err)
	}
	return list.Items, nil
}

// hostHolderOf reads the Websites sharing w's host and decides which, if
// any, holds it.
func (r *Reconciler) hostHolderOf(ctx context.Context, w *websitev1.Website) (*websitev1.Website, error) {
	host := ingressHost(w)
	if host == "" {
		return nil, nil
	}
	sharers, err := sharingHost(ctx, r.Client, host)
	if err != nil {
		return nil, err
	}
	if holder := hostHolder(w, sharers); holder != nil {
		return holder.DeepCopy(), nil
	}
	return nil, nil
}

// websitesAfterOnHost maps a Website to the Websites whose hold of the same
// host it may decide: those that claimed it after it did, of any namespace
// (a Website of its own namespace may lose the host to one of a third
// namespace once it is gone). Called with the old and the new object of an
// update, it reaches those of the host given up and of the host taken.
func (r *Reconciler) websitesAfterOnHost(ctx context.Context, obj client.Object) []reconcile.Request {
	w, ok := obj.(*websitev1.Website)
	if !ok || ingressHost(w) == "" {
		return nil
	}
	sharers, err := sharingHost(ctx, r.Client, ingressHost(w))
	if err != nil {
		// A map function cannot return an error; the next change of the
		// host's Websites maps again.
		log.FromContext(ctx).Error(err, "Cannot find the Websites sharing an Ingress host", "host", ingressHost(w))
		return nil
	}
	var requests []reconcile.Request
	for i := range sharers {
		other := &sharers[i]
		if other.Namespace == w.Namespace && other.Name == w.Name || !claimsBefore(w, other) {
			continue
		}
		requests = append(requests, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: other.Namespace, Name: other.Name}})
	}
	return requests
}

// hostChanged passes the updates of Websites whose Ingress host changed:
// the only updates that change which Website holds a host. Creations and
// deletions always pass.
var hostChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	before, ok1 := e.ObjectOld.(*websitev1.Website)
	after, ok2 := e.ObjectNew.(*websitev1.Website)
	return !ok1 || !ok2 || ingressHost(before) != ingressHost(after)
}}
