package operator

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
)

// servedAPIs is what the API server serves, as discovery tells it once at
// start: which controllers can run, which optional APIs are there, and
// whether a resource named in a role is namespaced.
type servedAPIs struct {
	// resources holds, per group version, its resources and subresources
	// ("websites", "websites/status") by name.
	resources map[schema.GroupVersion]map[string]metav1.APIResource
	// failed holds the group versions whose discovery failed (an
	// aggregated API server that is down, say): nothing is known of them.
	failed map[schema.GroupVersion]error
}

// discoverAPIs asks the API server for every group and resource. With
// aggregated discovery that is two requests. Groups that fail to answer are
// recorded, not fatal: only a controller or check that needs one fails.
func discoverAPIs(ctx context.Context, client discovery.ServerResourcesInterfaceWithContext) (servedAPIs, error) {
	served := servedAPIs{
		resources: map[schema.GroupVersion]map[string]metav1.APIResource{},
		failed:    map[schema.GroupVersion]error{},
	}
	_, lists, err := client.ServerGroupsAndResourcesWithContext(ctx)
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return servedAPIs{}, fmt.Errorf("discover the served APIs: %w", err)
		}
		served.failed = partial.Groups
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return servedAPIs{}, fmt.Errorf("discover the served APIs: %w", err)
		}
		byName := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			byName[r.Name] = r
		}
		served.resources[gv] = byName
	}
	return served, nil
}

// resource looks up a resource, or a subresource as "name/sub", in one
// group version.
func (s servedAPIs) resource(gvr schema.GroupVersionResource) (metav1.APIResource, bool) {
	r, ok := s.resources[gvr.GroupVersion()][gvr.Resource]
	return r, ok
}

// namespaced tells whether a resource of a group is namespaced, in whichever
// version is served; known is false when no version serves it.
func (s servedAPIs) namespaced(gr schema.GroupResource) (namespaced, known bool) {
	for gv, byName := range s.resources {
		if gv.Group != gr.Group {
			continue
		}
		if r, ok := byName[gr.Resource]; ok {
			return r.Namespaced, true
		}
	}
	return false, false
}
