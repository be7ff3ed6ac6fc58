package localcluster

// SIMULATION: a kube-proxy for the Services of PostgreSQL clusters, on
// loopback. See simulation_postgres.go.
//
// A Service labelled example.com/postgrescluster that has a cluster IP gets
// a TCP proxy per port on a free port of 127.0.0.1, written into its
// annotation simulation.example.com/address (the first port;
// simulation.example.com/address.NAME for the others). Each connection goes
// to a ready endpoint of the Service's EndpointSlices: the pod that the
// endpoint's targetRef names, at its namespace address and the endpoint's
// port. Without one, the connection is closed at once. Connections to an
// endpoint that leaves the slices are closed. Headless Services get no
// proxy.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// SimulationAddressAnnotation, on a Service of a PostgreSQL cluster, is the
// address on 127.0.0.1 where the simulation's proxy forwards to the
// Service's endpoints (SIMULATION: no real cluster has it).
const SimulationAddressAnnotation = "simulation.example.com/address"

// simulationFieldManager writes the simulation's annotations.
const simulationFieldManager = "localcluster-simulation"

type serviceProxies struct {
	cl    client.Client
	byUID map[types.UID]*serviceProxy
}

type serviceProxy struct {
	ports []servicePortProxy
}

type servicePortProxy struct {
	port       corev1.ServicePort
	annotation string
	proxy      *tcpProxy
}

// podAddrFunc finds the namespace address of a simulated pod.
type podAddrFunc func(namespace, name string, uid types.UID) (netip.Addr, bool)

// sync gives each Service its proxies, annotations and backends, and closes
// the proxies of Services that are gone.
func (sp *serviceProxies) sync(ctx context.Context, podAddr podAddrFunc) {
	services := &corev1.ServiceList{}
	if err := sp.cl.List(ctx, services, client.HasLabels{v1alpha1.PostgresClusterLabel}); err != nil {
		return
	}
	seen := map[types.UID]bool{}
	for i := range services.Items {
		svc := &services.Items[i]
		if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.Type == corev1.ServiceTypeExternalName || svc.DeletionTimestamp != nil {
			continue
		}
		p := sp.byUID[svc.UID]
		if p == nil {
			var err error
			if p, err = newServiceProxy(svc); err != nil {
				continue
			}
			sp.byUID[svc.UID] = p
		}
		seen[svc.UID] = true
		sp.annotate(ctx, svc, p)
		slices := &discoveryv1.EndpointSliceList{}
		if err := sp.cl.List(ctx, slices, client.InNamespace(svc.Namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
			continue
		}
		for _, port := range p.ports {
			ready, present := backends(slices.Items, port.port.Name, podAddr)
			port.proxy.setBackends(ready, present)
		}
	}
	for uid, p := range sp.byUID {
		if !seen[uid] {
			p.close()
			delete(sp.byUID, uid)
		}
	}
}

func newServiceProxy(svc *corev1.Service) (*serviceProxy, error) {
	p := &serviceProxy{}
	for i, port := range svc.Spec.Ports {
		if port.Protocol != "" && port.Protocol != corev1.ProtocolTCP {
			continue
		}
		proxy, err := startTCPProxy("127.0.0.1:0")
		if err != nil {
			p.close()
			return nil, err
		}
		annotation := SimulationAddressAnnotation
		if i > 0 {
			annotation += "." + port.Name
		}
		p.ports = append(p.ports, servicePortProxy{port: port, annotation: annotation, proxy: proxy})
	}
	return p, nil
}

func (p *serviceProxy) close() {
	for _, port := range p.ports {
		port.proxy.close()
	}
}

// annotate writes the proxies' addresses on the Service when they differ.
func (sp *serviceProxies) annotate(ctx context.Context, svc *corev1.Service, p *serviceProxy) {
	want := map[string]string{}
	for _, port := range p.ports {
		if svc.Annotations[port.annotation] != port.proxy.addr() {
			want[port.annotation] = port.proxy.addr()
		}
	}
	if len(want) == 0 {
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": want}})
	_ = sp.cl.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(simulationFieldManager))
}

func (sp *serviceProxies) closeAll() {
	for uid, p := range sp.byUID {
		p.close()
		delete(sp.byUID, uid)
	}
}

// backends are the addresses of the endpoints of a Service port: ready
// ones, and all that the slices hold.
func backends(slices []discoveryv1.EndpointSlice, portName string, podAddr podAddrFunc) (ready []string, present map[string]bool) {
	present = map[string]bool{}
	for _, slice := range slices {
		var port int32
		for _, sp := range slice.Ports {
			if sp.Name != nil && *sp.Name == portName && sp.Port != nil && (sp.Protocol == nil || *sp.Protocol == corev1.ProtocolTCP) {
				port = *sp.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, ep := range slice.Endpoints {
			ref := ep.TargetRef
			if ref == nil || ref.Kind != "Pod" {
				continue
			}
			namespace := ref.Namespace
			if namespace == "" {
				namespace = slice.Namespace
			}
			addr, ok := podAddr(namespace, ref.Name, ref.UID)
			if !ok {
				continue
			}
			backend := net.JoinHostPort(addr.String(), strconv.Itoa(int(port)))
			present[backend] = true
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready = append(ready, backend)
			}
		}
	}
	return ready, present
}

// PostgresClientConnString is the libpq connection string with which a
// client on this machine reaches a PostgresCluster Service through its
// simulated address (SimulationAddressAnnotation) over TLS, the server's
// certificate verified against the cluster's CA in rootCert, its name
// too: the certificate names localhost, not the loopback IP connected to
// (hostaddr). SIMULATION.
func PostgresClientConnString(address, user, dbname, rootCert string) (string, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return "", fmt.Errorf("simulated address %q: %w", address, err)
	}
	return fmt.Sprintf("host=localhost hostaddr=%s port=%s user=%s dbname=%s sslmode=verify-full sslrootcert=%s",
		host, port, user, dbname, rootCert), nil
}
