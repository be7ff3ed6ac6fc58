package plugin

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"example.com/platform-operator/api/v1alpha1"
)

func newReportCommand(o *options) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "report NAME",
		Short: "Write a support bundle: objects, events, logs, redacted Secrets",
		Long: `Write a zip of what a person helping with a PostgresCluster needs: the
cluster, its pods, claims, Services, PodDisruptionBudgets, BackupJobs,
the events of all of them, each pod's log (and the previous container's),
and its Secrets with every value replaced by its length. What cannot be
read (a log the node does not serve, a kind you may not list) is noted in
the bundle's errors.txt, and the rest is written.`,
		Example:           "  kubectl platform pg report db -f db-report.zip",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completeNames(&v1alpha1.PostgresClusterList{}),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, pg, err := o.getPostgresCluster(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if file == "" {
				file = fmt.Sprintf("report-%s-%s.zip", pg.Name, o.now().UTC().Format("20060102T150405Z"))
			}
			logs, err := o.logReader()
			if err != nil {
				return err
			}
			if err := writeReport(cmd.Context(), c, logs, pg, file); err != nil {
				return err
			}
			fmt.Fprintf(o.streams.Out, "Wrote %s\n", file)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the zip to write (default report-NAME-TIME.zip)")
	return cmd
}

// logReader reads pods' logs: controller-runtime's client has no log
// subresource.
func (o *options) logReader() (kubernetes.Interface, error) {
	config, err := o.flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig: %w", err)
	}
	config.UserAgent = Name
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("make a client of %s: %w", config.Host, err)
	}
	return cs, nil
}

// bundle is a zip being written, with the errors met on the way.
type bundle struct {
	zip    *zip.Writer
	dir    string
	errors []string
}

func (b *bundle) add(name string, data []byte) error {
	w, err := b.zip.Create(path.Join(b.dir, name))
	if err != nil {
		return fmt.Errorf("add %s to the bundle: %w", name, err)
	}
	_, err = w.Write(data)
	return err
}

// addObjects writes objs as one YAML list, each with its kind.
func (b *bundle) addObjects(name string, objs []runtime.Object) error {
	list := make([]any, 0, len(objs))
	for _, obj := range objs {
		obj = obj.DeepCopyObject()
		if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
			obj.GetObjectKind().SetGroupVersionKind(gvk)
		}
		if o, ok := obj.(client.Object); ok {
			o.SetManagedFields(nil)
		}
		list = append(list, obj)
	}
	data, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": list})
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	return b.add(name, data)
}

func (b *bundle) failed(format string, args ...any) {
	b.errors = append(b.errors, fmt.Sprintf(format, args...))
}

// writeReport writes the bundle of pg to file, removing it on a failure to
// write; what cannot be read goes into the bundle's errors.txt.
func writeReport(ctx context.Context, c client.Client, logs kubernetes.Interface, pg *v1alpha1.PostgresCluster, file string) (err error) {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("create the bundle: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write the bundle %s: %w", file, cerr)
		}
		if err != nil {
			_ = os.Remove(file)
		}
	}()
	b := &bundle{zip: zip.NewWriter(f), dir: pg.Name}
	if err := collect(ctx, c, logs, pg, b); err != nil {
		return err
	}
	if len(b.errors) > 0 {
		if err := b.add("errors.txt", []byte(fmt.Sprintln(joinLines(b.errors)))); err != nil {
			return err
		}
	}
	if err := b.zip.Close(); err != nil {
		return fmt.Errorf("write the bundle %s: %w", file, err)
	}
	return nil
}

func joinLines(lines []string) string {
	out := ""
	for i, l := range lines {
		if i > 0 {
			out += "\n"
		}
		out += l
	}
	return out
}

// collect adds pg's objects, events and logs to b. The objects are those
// labelled with the cluster's name, and the BackupJobs whose source it is.
func collect(ctx context.Context, c client.Client, logs kubernetes.Interface, pg *v1alpha1.PostgresCluster, b *bundle) error {
	if err := b.addObjects("postgrescluster.yaml", []runtime.Object{pg}); err != nil {
		return err
	}
	inCluster := []client.ListOption{client.InNamespace(pg.Namespace), client.MatchingLabels{v1alpha1.PostgresClusterLabel: pg.Name}}
	names := map[string]bool{pg.Name: true}
	kinds := []struct {
		file string
		list client.ObjectList
	}{
		{"pods.yaml", &corev1.PodList{}},
		{"persistentvolumeclaims.yaml", &corev1.PersistentVolumeClaimList{}},
		{"services.yaml", &corev1.ServiceList{}},
		{"poddisruptionbudgets.yaml", &policyv1.PodDisruptionBudgetList{}},
		{"secrets.yaml", &corev1.SecretList{}},
	}
	var pods []corev1.Pod
	for _, k := range kinds {
		if err := c.List(ctx, k.list, inCluster...); err != nil {
			b.failed("list %s: %v", k.file, err)
			continue
		}
		objs := objectsOf(k.list, names)
		if pl, ok := k.list.(*corev1.PodList); ok {
			pods = pl.Items
		}
		if err := b.addObjects(k.file, objs); err != nil {
			return err
		}
	}
	var bjs v1alpha1.BackupJobList
	if err := c.List(ctx, &bjs, client.InNamespace(pg.Namespace)); err != nil {
		b.failed("list backupjobs: %v", err)
	} else {
		var objs []runtime.Object
		for i := range bjs.Items {
			if bjs.Items[i].Spec.Source.PostgresCluster == pg.Name {
				objs, names[bjs.Items[i].Name] = append(objs, &bjs.Items[i]), true
			}
		}
		if err := b.addObjects("backupjobs.yaml", objs); err != nil {
			return err
		}
	}
	if err := addEvents(ctx, c, pg.Namespace, names, b); err != nil {
		return err
	}
	for _, pod := range pods {
		if err := addLogs(ctx, logs, &pod, b); err != nil {
			return err
		}
	}
	return nil
}

// objectsOf is the items of list, Secrets redacted, and records their
// names in names, whose events the bundle holds.
func objectsOf(list client.ObjectList, names map[string]bool) []runtime.Object {
	var objs []runtime.Object
	switch l := list.(type) {
	case *corev1.PodList:
		for i := range l.Items {
			objs, names[l.Items[i].Name] = append(objs, &l.Items[i]), true
		}
	case *corev1.PersistentVolumeClaimList:
		for i := range l.Items {
			objs, names[l.Items[i].Name] = append(objs, &l.Items[i]), true
		}
	case *corev1.ServiceList:
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	case *policyv1.PodDisruptionBudgetList:
		for i := range l.Items {
			objs = append(objs, &l.Items[i])
		}
	case *corev1.SecretList:
		for i := range l.Items {
			objs = append(objs, redactSecret(&l.Items[i]))
		}
	}
	return objs
}

// addEvents adds the namespace's events about the named objects.
func addEvents(ctx context.Context, c client.Client, ns string, names map[string]bool, b *bundle) error {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		b.failed("list events: %v", err)
		return nil
	}
	var objs []runtime.Object
	for i := range events.Items {
		if names[events.Items[i].InvolvedObject.Name] {
			objs = append(objs, &events.Items[i])
		}
	}
	return b.addObjects("events.yaml", objs)
}

// addLogs adds the log of each container of pod, and of its previous
// instance when it restarted.
func addLogs(ctx context.Context, logs kubernetes.Interface, pod *corev1.Pod, b *bundle) error {
	containers := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	restarted := map[string]bool{}
	for _, s := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		restarted[s.Name] = s.RestartCount > 0
	}
	for _, ctr := range containers {
		for _, previous := range []bool{false, true} {
			if previous && !restarted[ctr.Name] {
				continue
			}
			name := fmt.Sprintf("logs/%s/%s.log", pod.Name, ctr.Name)
			if previous {
				name = fmt.Sprintf("logs/%s/%s.previous.log", pod.Name, ctr.Name)
			}
			req := logs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: ctr.Name, Previous: previous})
			stream, err := req.Stream(ctx)
			if err != nil {
				b.failed("%s: %v", name, err)
				continue
			}
			data, err := io.ReadAll(stream)
			_ = stream.Close()
			if err != nil {
				b.failed("%s: %v", name, err)
			}
			if err := b.add(name, data); err != nil {
				return err
			}
		}
	}
	return nil
}
