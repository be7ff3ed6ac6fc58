package operator

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"example.com/platform-operator/internal/controller"
)

// NewScheme is the one scheme of the operator and of its tests: the
// built-in types of client-go and the types of each given controller.
func NewScheme(controllers ...controller.Descriptor) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register the built-in types: %w", err)
	}
	for _, d := range controllers {
		if d.AddToScheme == nil {
			continue
		}
		if err := d.AddToScheme(scheme); err != nil {
			return nil, fmt.Errorf("register the types of controller %s: %w", d.Name, err)
		}
	}
	return scheme, nil
}
