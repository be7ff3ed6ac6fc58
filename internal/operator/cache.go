package operator

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller"
)

// cacheOptions merges what each controller asks of the shared cache. The
// cache holds one informer per object type, so two controllers that watch
// the same type must select and transform it the same way: a difference is
// an error at start, not one controller silently missing objects. Every
// type is cached without managedFields, which no controller reads, and only
// in the watched namespaces.
func cacheOptions(scheme *runtime.Scheme, controllers []controller.Descriptor, namespaces []string) (cache.Options, error) {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject:         map[client.Object]cache.ByObject{},
	}
	type contribution struct {
		controller string
		config     children.CacheSetting
	}
	seen := map[schema.GroupVersionKind]contribution{}
	for _, d := range controllers {
		if d.Cache == nil {
			continue
		}
		for obj, config := range d.Cache() {
			gvk, err := apiutil.GVKForObject(obj, scheme)
			if err != nil {
				return cache.Options{}, fmt.Errorf("cache settings of controller %s: %w", d.Name, err)
			}
			if first, ok := seen[gvk]; ok {
				if diff := byObjectDifference(first.config, config); diff != "" {
					return cache.Options{}, fmt.Errorf("controllers %s and %s configure the cache of %s differently (%s): the cache holds one copy of each type, so they must agree",
						first.controller, d.Name, gvk.GroupKind(), diff)
				}
				continue
			}
			seen[gvk] = contribution{controller: d.Name, config: config}
			opts.ByObject[obj] = config.ByObject
		}
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts, nil
}

// byObjectDifference names the first setting in which a and b differ, or
// returns "". Selectors compare by their text, transforms by their name and
// their function: a closure's function is its literal's, the same for every
// closure of it, so the name tells two transforms apart where the function
// cannot.
func byObjectDifference(a, b children.CacheSetting) string {
	switch {
	case a.TransformName != b.TransformName:
		return fmt.Sprintf("transform %q or %q", a.TransformName, b.TransformName)
	case selectorText(a.Label) != selectorText(b.Label):
		return fmt.Sprintf("label selector %q or %q", selectorText(a.Label), selectorText(b.Label))
	case selectorText(a.Field) != selectorText(b.Field):
		return fmt.Sprintf("field selector %q or %q", selectorText(a.Field), selectorText(b.Field))
	case funcPointer(a.Transform) != funcPointer(b.Transform):
		return "transform function"
	case !reflect.DeepEqual(a.UnsafeDisableDeepCopy, b.UnsafeDisableDeepCopy):
		return "UnsafeDisableDeepCopy"
	case !reflect.DeepEqual(a.EnableWatchBookmarks, b.EnableWatchBookmarks):
		return "EnableWatchBookmarks"
	case !slices.Equal(slices.Sorted(maps.Keys(a.Namespaces)), slices.Sorted(maps.Keys(b.Namespaces))):
		return fmt.Sprintf("namespaces %s or %s",
			strings.Join(slices.Sorted(maps.Keys(a.Namespaces)), ","), strings.Join(slices.Sorted(maps.Keys(b.Namespaces)), ","))
	}
	return ""
}

// selectorText is the text of a label or field selector; nil selects
// everything, as the empty text does.
func selectorText(s fmt.Stringer) string {
	if s == nil {
		return ""
	}
	return s.String()
}

func funcPointer(f any) uintptr {
	v := reflect.ValueOf(f)
	if !v.IsValid() || v.IsNil() {
		return 0
	}
	return v.Pointer()
}
