package website

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// Difference is how a child as observed differs from its desired state.
type Difference int

const (
	// NoDifference: the child was last applied from the desired
	// configuration and still carries all of it. Applying again would
	// change nothing.
	NoDifference Difference = iota
	// ConfigChanged: the child was applied from another configuration, most
	// often because the Website's spec changed.
	ConfigChanged
	// Drifted: the child was applied from the desired configuration, but
	// someone has since changed or removed a field the operator owns.
	Drifted
)

// Compare tells how observed, a child as read from the cluster, differs from
// desired, its apply configuration.
//
// The hash catches changes of the Website: a field the operator stops
// setting (say readinessPath removed) leaves no trace in desired, but it
// changes the hash. The field-by-field check catches drift. Fields that only
// the API server or other managers set are ignored, as server-side apply
// would leave them alone.
//
// desired must carry ConfigHashAnnotation, as the builders of this package
// set it.
func Compare(desired, observed any) (Difference, error) {
	want, err := toJSONMap(desired)
	if err != nil {
		return 0, fmt.Errorf("desired: %w", err)
	}
	have, err := toJSONMap(observed)
	if err != nil {
		return 0, fmt.Errorf("observed: %w", err)
	}
	wantHash := nestedString(want, "metadata", "annotations", ConfigHashAnnotation)
	haveHash := nestedString(have, "metadata", "annotations", ConfigHashAnnotation)
	switch {
	case wantHash == "" || wantHash != haveHash:
		return ConfigChanged, nil
	case !contains(have, want):
		return Drifted, nil
	}
	return NoDifference, nil
}

// contains reports whether have holds every value of want: maps key by key,
// lists item by item (each wanted item must be contained in some item that
// have holds, so that items added by others do not count as drift), and
// scalars by equality.
func contains(have, want any) bool {
	switch want := want.(type) {
	case map[string]any:
		haveMap, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for key, wantValue := range want {
			haveValue, present := haveMap[key]
			if !present {
				if isEmpty(wantValue) {
					// An empty object or list that the operator sets, such as
					// emptyDir: {}, may be omitted when it is read back.
					continue
				}
				return false
			}
			if !contains(haveValue, wantValue) {
				return false
			}
		}
		return true
	case []any:
		haveList, ok := have.([]any)
		if !ok {
			return len(want) == 0 && have == nil
		}
		for _, wantItem := range want {
			found := false
			for _, haveItem := range haveList {
				if contains(haveItem, wantItem) {
					found = true
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(have, want)
	}
}

func isEmpty(value any) bool {
	switch value := value.(type) {
	case map[string]any:
		return len(value) == 0
	case []any:
		return len(value) == 0
	}
	return false
}

// toJSONMap turns an object or apply configuration into its JSON form, so
// that a typed object and an apply configuration compare field by field,
// with numbers as float64 on both sides.
func toJSONMap(value any) (map[string]any, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// nestedString is the string at a path of nested maps, or "".
func nestedString(obj map[string]any, fields ...string) string {
	var current any = obj
	for _, field := range fields {
		m, ok := current.(map[string]any)
		if !ok {
			return ""
		}
		current = m[field]
	}
	s, _ := current.(string)
	return s
}
