package operator

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/podsecurity"
)

// selection is what --controllers asks for: the controllers to try, in
// registry order, and which of them it names explicitly (not only through
// "*"). An explicitly named controller that cannot run stops the start; one
// that "*" brought in is skipped with a log line.
type selection struct {
	enabled  []controller.Descriptor
	explicit map[string]bool
}

// selectControllers reads --controllers as kube-controller-manager reads
// its flag of the same name: "*" enables every known controller, "name"
// enables one, "-name" disables one, and for each controller the first
// entry that names it wins.
func selectControllers(known []controller.Descriptor, entries []string) (selection, error) {
	names := controllerNames(known)
	star := false
	decided := map[string]bool{}
	for _, entry := range entries {
		name := strings.TrimSpace(entry)
		if name == "*" {
			star = true
			continue
		}
		enable := true
		if rest, ok := strings.CutPrefix(name, "-"); ok {
			name, enable = rest, false
		}
		if !slices.Contains(names, name) {
			return selection{}, fmt.Errorf("--controllers: unknown controller %q; known controllers: %s (or * for all of them)",
				entry, strings.Join(names, ", "))
		}
		if _, seen := decided[name]; !seen {
			decided[name] = enable
		}
	}
	sel := selection{explicit: map[string]bool{}}
	for _, d := range known {
		enable, named := decided[d.Name]
		if !named {
			enable = star
		}
		if !enable {
			continue
		}
		sel.enabled = append(sel.enabled, d)
		if named {
			sel.explicit[d.Name] = true
		}
	}
	if len(sel.enabled) == 0 {
		return selection{}, fmt.Errorf("--controllers=%s leaves no controller to run; known controllers: %s",
			strings.Join(entries, ","), strings.Join(names, ", "))
	}
	return sel, nil
}

func controllerNames(ds []controller.Descriptor) []string {
	names := make([]string, 0, len(ds))
	for _, d := range ds {
		names = append(names, d.Name)
	}
	return names
}

// plan is what runs, decided at start from what the API server serves.
type plan struct {
	run     []controller.Descriptor
	skipped []skippedController
	// servedOptional says, per controller name, which of its OptionalAPIs
	// the API server serves.
	servedOptional map[string]map[schema.GroupVersionResource]bool
	// podSecurity is the version of the Pod Security Standards the API
	// server enforces.
	podSecurity podsecurity.Version
}

type skippedController struct {
	name, reason string
}

// planControllers keeps the selected controllers that can run here: their
// resource is served with its subresources, and they need no more than the
// namespaces the operator watches. A controller that cannot run is skipped,
// unless --controllers named it: then the start fails with the fix.
func planControllers(sel selection, served servedAPIs, namespaces []string) (plan, error) {
	p := plan{servedOptional: map[string]map[schema.GroupVersionResource]bool{}}
	for _, d := range sel.enabled {
		reason, err := cannotRun(d, served, namespaces)
		if err != nil {
			return plan{}, err
		}
		if reason != "" {
			if sel.explicit[d.Name] {
				return plan{}, fmt.Errorf("controller %s, named in --controllers, cannot run: %s", d.Name, reason)
			}
			p.skipped = append(p.skipped, skippedController{name: d.Name, reason: reason})
			continue
		}
		p.run = append(p.run, d)
		optional := map[schema.GroupVersionResource]bool{}
		for _, gvr := range d.OptionalAPIs {
			_, optional[gvr] = served.resource(gvr)
		}
		p.servedOptional[d.Name] = optional
	}
	if len(p.run) == 0 {
		reasons := make([]string, 0, len(p.skipped))
		for _, s := range p.skipped {
			reasons = append(reasons, s.name+": "+s.reason)
		}
		return plan{}, errors.New("no controller to run: " + strings.Join(reasons, "; "))
	}
	return p, nil
}

// cannotRun says why d cannot run here, or "" when it can. An error means
// that discovery could not tell.
func cannotRun(d controller.Descriptor, served servedAPIs, namespaces []string) (string, error) {
	gv := d.Resource.GroupVersion()
	if err := served.failed[gv]; err != nil {
		return "", fmt.Errorf("discover the API %s of controller %s: %w", gv, d.Name, err)
	}
	component := fmt.Sprintf("the %s component of deploy/ (deploy/components/%s)", d.Name, d.Name)
	r, ok := served.resource(d.Resource)
	if !ok {
		return fmt.Sprintf("%s (%s) is not installed in this cluster: apply %s first", d.Resource.Resource, gv, component), nil
	}
	for _, sub := range d.Subresources {
		if _, ok := served.resource(d.Resource.GroupVersion().WithResource(d.Resource.Resource + "/" + sub)); !ok {
			return fmt.Sprintf("the installed %s CRD has no %s subresource (is it an older or foreign CRD, such as the tutorial's crd.yaml?): apply %s, which keeps every existing %s",
				d.Resource.GroupResource(), sub, component, r.Kind), nil
		}
	}
	if d.ClusterWide && len(namespaces) > 0 {
		return fmt.Sprintf("it needs every namespace, and --namespace limits the operator to %s: run it without --namespace, or leave it out with --controllers=-%s",
			strings.Join(namespaces, ", "), d.Name), nil
	}
	return "", nil
}
