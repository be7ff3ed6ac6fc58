package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createEmbeddedObjects creates every object of the YAML (or JSON) files in
// dir of files, such as the CRDs the local cluster installs before the
// components that watch them start. An object that exists already is kept:
// a restarted local cluster finds its CRDs in place.
func createEmbeddedObjects(ctx context.Context, cl client.Client, files fs.ReadDirFS, dir string) error {
	entries, err := files.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", dir, err)
	}
	for _, entry := range entries {
		data, err := fs.ReadFile(files, path.Join(dir, entry.Name()))
		if err != nil {
			return fmt.Errorf("read %s: %w", entry.Name(), err)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := decoder.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("decode %s: %w", entry.Name(), err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	return nil
}
