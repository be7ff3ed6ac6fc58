package website_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/controller/website/websitetest"
)

// atomicParents are the maps and lists of the children that server-side
// apply replaces whole (their schema says so): a key or an item added to
// them by someone else is drift. Anything else the builders set is granular:
// what others add there is theirs.
var atomicParents = []string{
	"spec.selector",           // Deployment: an atomic LabelSelector; Service: an atomic map
	"securityContext.sysctls", // an atomic list
	"capabilities.drop",
	"spec.rules", // Ingress
	"spec.tls",
	"command", "args",
}

// Every field that a builder sets is watched for drift: for each one, a live
// child that has it changed or removed differs from the desired state, and
// one that has a key or item added differs exactly when the field is
// atomic. Fields the builders do not set are someone else's.
func TestEveryFieldTheBuildersSetIsWatchedForDrift(t *testing.T) {
	w := websitetest.Website("site", "default", websitetest.WithReplicas(2), websitetest.WithEnv("MODE", "prod"),
		websitetest.WithEnv("EMPTY", ""), websitetest.WithSecretEnv("TOKEN", "creds", "token"),
		websitetest.WithResources(map[corev1.ResourceName]string{"cpu": "100m"}, map[corev1.ResourceName]string{"memory": "128Mi"}),
		websitetest.WithReadinessPath("/healthz"), websitetest.WithIngress("www.example.com", "/docs", "nginx", "www-tls"))
	children := []struct {
		desired runtime.ApplyConfiguration
		live    client.Object
		foreign map[string]any // fields the builders do not set
	}{
		{website.DesiredDeployment(w), &appsv1.Deployment{}, map[string]any{
			"metadata.annotations.someone/else": "x", "spec.minReadySeconds": int64(5),
			"spec.template.spec.nodeSelector": map[string]any{"disk": "ssd"},
		}},
		{website.DesiredService(w), &corev1.Service{}, map[string]any{
			"metadata.labels.team": "web", "spec.sessionAffinity": "ClientIP",
		}},
		{website.DesiredIngress(w), &networkingv1.Ingress{}, map[string]any{
			"metadata.annotations.nginx.ingress.kubernetes.io/rewrite-target": "/",
		}},
	}
	for _, child := range children {
		kind := fmt.Sprintf("%T", child.live)
		base := liveFrom(t, child.desired, child.live)
		if drift := driftOf(t, child.desired, child.live, base); len(drift) > 0 {
			t.Fatalf("%s as built shows drift: %v", kind, drift)
		}
		var desired map[string]any
		data, _ := json.Marshal(child.desired)
		_ = json.Unmarshal(data, &desired)

		checked := 0
		walk(desired, nil, func(path []any, value any) {
			name := kind + " " + pathString(path)
			if isKeyOrType(path) {
				return
			}
			for mutation, mutate := range map[string]func(map[string]any) bool{
				"changed": func(live map[string]any) bool {
					if current, ok := valueAt(live, path); ok {
						return set(live, path, changedValue(current))
					}
					return set(live, path, changedValue(value)) // a value storage dropped: given one
				},
				"removed": func(live map[string]any) bool { return remove(live, path) },
			} {
				live := deepCopy(base)
				if !mutate(live) || !effective(t, child.live, base, live) {
					continue
				}
				checked++
				if drift := driftOf(t, child.desired, child.live, live); len(drift) == 0 {
					t.Errorf("%s %s: no drift seen", name, mutation)
				}
			}
			current, _ := valueAt(base, path)
			// A map inside a list is an item (a struct): it gets no new key.
			_, isItem := path[len(path)-1].(int)
			if added, ok := withAddition(current); ok && !isItem {
				live := deepCopy(base)
				if !set(live, path, added) || !effective(t, child.live, base, live) {
					return // a key the type does not have
				}
				checked++
				drift := driftOf(t, child.desired, child.live, live)
				if atomic := isAtomic(path); atomic != (len(drift) > 0) {
					t.Errorf("%s with a key or item added: drift %v, want drift: %v", name, drift, atomic)
				}
			}
		})
		if checked < 10 {
			t.Errorf("%s: only %d mutations checked", kind, checked)
		}
		for field, value := range child.foreign {
			live := deepCopy(base)
			set(live, foreignPath(field), value)
			if drift := driftOf(t, child.desired, child.live, live); len(drift) > 0 {
				t.Errorf("%s %s set by someone else is seen as drift: %v", kind, field, drift)
			}
		}
	}
}

// liveFrom is the child as the API server would store it from desired,
// without defaults: a typed object, in its unstructured form.
func liveFrom(t *testing.T, desired runtime.ApplyConfiguration, typed client.Object) map[string]any {
	t.Helper()
	data, err := json.Marshal(desired)
	if err != nil {
		t.Fatal(err)
	}
	obj := typed.DeepCopyObject()
	if err := json.Unmarshal(data, obj); err != nil {
		t.Fatal(err)
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// effective reports whether live still differs from base once stored in the
// typed object: a key added to a struct is not a field and vanishes.
func effective(t *testing.T, typed client.Object, base, live map[string]any) bool {
	t.Helper()
	stored := func(u map[string]any) map[string]any {
		obj := typed.DeepCopyObject()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deepCopy(u), obj); err != nil {
			t.Fatalf("decode: %v", err)
		}
		out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return !reflect.DeepEqual(stored(base), stored(live))
}

func driftOf(t *testing.T, desired runtime.ApplyConfiguration, typed client.Object, live map[string]any) []string {
	t.Helper()
	obj := typed.DeepCopyObject().(client.Object)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live, obj); err != nil {
		t.Fatalf("decode live: %v", err)
	}
	drift, err := children.Drift(suite.Scheme, desired, obj)
	if err != nil {
		t.Fatalf("drift: %v", err)
	}
	return drift
}

// walk calls leaf for every scalar, empty map and empty list of v, and for
// every non-empty map and list too (for additions), with its path of map
// keys and list indexes.
func walk(v any, path []any, leaf func([]any, any)) {
	switch v := v.(type) {
	case map[string]any:
		if len(path) > 0 {
			leaf(path, v)
		}
		for key, child := range v {
			walk(child, append(append([]any{}, path...), key), leaf)
		}
	case []any:
		leaf(path, v)
		for i, child := range v {
			walk(child, append(append([]any{}, path...), i), leaf)
		}
	default:
		leaf(path, v)
	}
}

// isKeyOrType skips what identifies an object or an item rather than
// describes it: apiVersion, kind, name and namespace, the keys of keyed
// lists (changing one makes another item, which the merge-key test covers
// through the other fields), and the whole object's metadata maps.
func isKeyOrType(path []any) bool {
	last := fmt.Sprint(path[len(path)-1])
	if len(path) == 1 {
		return true
	}
	if len(path) == 2 && path[0] == "metadata" && (last == "name" || last == "namespace") {
		return true
	}
	switch last {
	case "name", "uid", "containerPort", "mountPath", "port", "protocol":
		// Keys of env, containers, volumes, ports, volume mounts and owner
		// references; the owner's name is a plain field but identifies it.
		_, inList := path[len(path)-2].(int)
		return inList
	}
	return false
}

func isAtomic(path []any) bool {
	p := pathString(path)
	for _, atomic := range atomicParents {
		if strings.HasSuffix(p, atomic) || strings.Contains(p, atomic+".") || strings.HasPrefix(p, atomic) {
			return true
		}
	}
	return false
}

// changedValue is another value of the same type.
func changedValue(v any) any {
	switch v := v.(type) {
	case string:
		if _, err := resource.ParseQuantity(v); err == nil {
			return "12345m" // another valid quantity: a limit or request
		}
		return v + "-changed"
	case float64:
		return v + 1
	case int64:
		return v + 1
	case bool:
		return !v
	case map[string]any:
		if len(v) == 0 {
			return nil // an empty map set by the builders (emptyDir: {}) is changed by removing it
		}
	}
	return nil
}

// withAddition is v with a key or an item added, for maps and lists.
func withAddition(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			return nil, false
		}
		out := deepCopy(v)
		for key, value := range v {
			if s, ok := value.(string); ok {
				out["added.example.com/"+strings.ReplaceAll(key, "/", "-")] = s
				return out, true
			}
		}
		return nil, false
	case []any:
		if len(v) == 0 {
			return nil, false
		}
		out := append([]any{}, v...)
		if s, ok := v[0].(string); ok {
			return append(out, s+"-added"), true
		}
		return nil, false
	}
	return nil, false
}

func set(obj map[string]any, path []any, value any) bool {
	if value == nil {
		return remove(obj, path)
	}
	parent, ok := parentOf(obj, path, true)
	if !ok {
		return false
	}
	switch p := parent.(type) {
	case map[string]any:
		p[path[len(path)-1].(string)] = value
	case []any:
		p[path[len(path)-1].(int)] = value
	}
	return true
}

func remove(obj map[string]any, path []any) bool {
	parent, ok := parentOf(obj, path, false)
	if !ok {
		return false
	}
	p, ok := parent.(map[string]any)
	if !ok {
		return false // list items are not removed; their fields are
	}
	key := path[len(path)-1].(string)
	if _, present := p[key]; !present {
		return false
	}
	delete(p, key)
	return true
}

// parentOf walks obj to the container of path's last element, creating maps
// on the way when create is set.
func parentOf(obj map[string]any, path []any, create bool) (any, bool) {
	var current any = obj
	for _, element := range path[:len(path)-1] {
		switch c := current.(type) {
		case map[string]any:
			next, ok := c[element.(string)]
			if !ok || next == nil {
				if !create {
					return nil, false
				}
				next = map[string]any{}
				c[element.(string)] = next
			}
			current = next
		case []any:
			i := element.(int)
			if i >= len(c) {
				return nil, false
			}
			current = c[i]
		default:
			return nil, false
		}
	}
	return current, true
}

// foreignPath splits "a.b.key/with.dots" into a.b and the rest as one key.
func foreignPath(field string) []any {
	parts := strings.SplitN(field, ".", 3)
	if len(parts) == 3 && (parts[1] == "annotations" || parts[1] == "labels") {
		return []any{parts[0], parts[1], parts[2]}
	}
	var path []any
	for _, p := range strings.Split(field, ".") {
		path = append(path, p)
	}
	return path
}

func pathString(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = fmt.Sprint(p)
	}
	return strings.Join(parts, ".")
}

func deepCopy(m map[string]any) map[string]any { return runtime.DeepCopyJSON(m) }

// valueAt is the value at path in obj, if any.
func valueAt(obj map[string]any, path []any) (any, bool) {
	parent, ok := parentOf(obj, path, false)
	if !ok {
		return nil, false
	}
	switch p := parent.(type) {
	case map[string]any:
		v, ok := p[path[len(path)-1].(string)]
		return v, ok
	case []any:
		if i := path[len(path)-1].(int); i < len(p) {
			return p[i], true
		}
	}
	return nil, false
}

// The children manager compares a child that has a generation again only
// when its generation, labels, annotations or owner references change, so
// that the status updates of a rollout cost no comparison: a builder that
// set any other metadata would have it go unwatched.
func TestBuildersSetNoMetadataThatTheGenerationDoesNotCover(t *testing.T) {
	w := websitetest.Website("site", "default", websitetest.WithIngress("www.example.com", "/", "nginx", "www-tls"))
	watched := map[string]bool{"name": true, "namespace": true, "labels": true, "annotations": true, "ownerReferences": true}
	for _, desired := range []runtime.ApplyConfiguration{website.DesiredDeployment(w), website.DesiredService(w), website.DesiredIngress(w)} {
		var obj struct {
			Kind     string         `json:"kind"`
			Metadata map[string]any `json:"metadata"`
		}
		data, err := json.Marshal(desired)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		if len(obj.Metadata) == 0 {
			t.Fatalf("%s: no metadata", obj.Kind)
		}
		for field := range obj.Metadata {
			if !watched[field] {
				t.Errorf("%s sets metadata.%s, which a change of the generation does not cover", obj.Kind, field)
			}
		}
	}
}
