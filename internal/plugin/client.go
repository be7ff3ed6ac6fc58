package plugin

import (
	"context"
	"fmt"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/api/v1alpha1"
)

// scheme holds every type the plugin reads or writes.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(websitev1.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	utilruntime.Must(snapshotv1.AddToScheme(s))
	return s
}()

// client is a client of the cluster the kubeconfig flags name, with the
// user's own credentials: no cache, every read goes to the API server.
// Tests give their own.
func (o *options) client() (client.Client, error) {
	if o.testClient != nil {
		return o.testClient, nil
	}
	config, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	config.UserAgent = Name
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("make a client of %s: %w", config.Host, err)
	}
	return c, nil
}

// namespace is -n, else the kubeconfig context's namespace, else default.
func (o *options) namespace() (string, error) {
	ns, _, err := o.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("read the namespace from the kubeconfig: %w", err)
	}
	return ns, nil
}

// getNamed reads the object called name, of the namespace the kubeconfig
// flags give, into obj (kind names it in errors), and returns the client
// for what follows.
func (o *options) getNamed(ctx context.Context, kind, name string, obj client.Object) (client.Client, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		return nil, fmt.Errorf("read %s %s/%s: %w", kind, ns, name, err)
	}
	return c, nil
}
