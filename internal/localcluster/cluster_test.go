package localcluster_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"example.com/platform-operator/internal/localcluster"
)

// startCluster starts a cluster that the test stops when it ends, even on
// failure or panic.
func startCluster(t *testing.T, opts localcluster.Options) (*localcluster.Cluster, kubernetes.Interface) {
	t.Helper()
	requireBinaries(t)
	opts.Logf = t.Logf
	cluster, err := localcluster.Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	clientset, err := kubernetes.NewForConfig(cluster.RESTConfig())
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return cluster, clientset
}

func requireBinaries(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control-plane binaries")
	}
	if os.Getenv(localcluster.BinDirEnv) == "" {
		t.Fatalf("%s is not set: run the tests with make test, which builds the control plane", localcluster.BinDirEnv)
	}
}

func TestDeploymentBecomesAvailableThroughKwok(t *testing.T) {
	g := NewWithT(t)
	_, clientset := startCluster(t, localcluster.Options{})
	ctx := t.Context()

	labels := map[string]string{"app": "web"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.25"}}},
			},
		},
	}
	_, err := clientset.AppsV1().Deployments("default").Create(ctx, deployment, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		d, err := clientset.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(3)))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

func TestImageFromInvalidRegistryNeverStarts(t *testing.T) {
	g := NewWithT(t)
	_, clientset := startCluster(t, localcluster.Options{})
	ctx := t.Context()

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.invalid/site:1"}}},
	}
	_, err := clientset.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		p, err := clientset.CoreV1().Pods("default").Get(ctx, "broken", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.ContainerStatuses).To(HaveLen(1))
		g.Expect(p.Status.ContainerStatuses[0].State.Waiting).NotTo(BeNil())
		g.Expect(p.Status.ContainerStatuses[0].State.Waiting.Reason).To(Equal("ErrImagePull"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	g.Consistently(func(g Gomega) {
		p, err := clientset.CoreV1().Pods("default").Get(ctx, "broken", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.Phase).To(Equal(corev1.PodPending))
	}).WithTimeout(3 * time.Second).Should(Succeed())
}

func TestGarbageCollectorDeletesDependents(t *testing.T) {
	g := NewWithT(t)
	_, clientset := startCluster(t, localcluster.Options{})
	ctx := t.Context()
	configMaps := clientset.CoreV1().ConfigMaps("default")

	owner, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}},
	}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(configMaps.Delete(ctx, "owner", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() error {
		_, err := configMaps.Get(ctx, "dependent", metav1.GetOptions{})
		return err
	}).WithTimeout(30 * time.Second).Should(Satisfy(apierrors.IsNotFound))
}

func TestNamespaceDeletionCompletes(t *testing.T) {
	g := NewWithT(t)
	_, clientset := startCluster(t, localcluster.Options{})
	ctx := t.Context()

	_, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = clientset.CoreV1().ConfigMaps("doomed").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "data"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(clientset.CoreV1().Namespaces().Delete(ctx, "doomed", metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func() error {
		_, err := clientset.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
		return err
	}).WithTimeout(60 * time.Second).Should(Satisfy(apierrors.IsNotFound))
}

func TestTwoClustersRunAtOnceAndStopLeavesNoProcess(t *testing.T) {
	g := NewWithT(t)
	requireBinaries(t)
	ctx := t.Context()

	first, err := localcluster.Start(ctx, localcluster.Options{Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer first.Stop()
	second, err := localcluster.Start(ctx, localcluster.Options{Logf: t.Logf})
	g.Expect(err).NotTo(HaveOccurred())
	defer second.Stop()

	g.Expect(first.Server()).NotTo(Equal(second.Server()))
	for _, cluster := range []*localcluster.Cluster{first, second} {
		clientset, err := kubernetes.NewForConfig(cluster.RESTConfig())
		g.Expect(err).NotTo(HaveOccurred())
		_, err = clientset.CoreV1().ConfigMaps("default").Create(ctx,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-here"}}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred(), "each cluster has its own etcd, so the same name is free in both")
	}

	pids := append(first.PIDs(), second.PIDs()...)
	g.Expect(pids).To(HaveLen(10), "five components each")
	dir := first.Dir()
	g.Expect(first.Stop()).To(Succeed())
	g.Expect(second.Stop()).To(Succeed())
	for _, pid := range pids {
		g.Expect(syscall.Kill(pid, 0)).To(MatchError(syscall.ESRCH), "process %d still exists after Stop", pid)
	}
	g.Expect(dir).NotTo(BeADirectory(), "a temporary state folder is removed by Stop")
}

func TestOutageOfAPIServerAndRecovery(t *testing.T) {
	g := NewWithT(t)
	cluster, clientset := startCluster(t, localcluster.Options{})
	ctx := t.Context()

	_, err := clientset.CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survives"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(cluster.StopComponent(localcluster.APIServer)).To(Succeed())
	_, err = clientset.CoreV1().ConfigMaps("default").Get(ctx, "survives", metav1.GetOptions{})
	g.Expect(err).To(HaveOccurred(), "the API server is down")
	g.Expect(cluster.Err()).NotTo(HaveOccurred(), "a component stopped on purpose is not a failure")

	g.Expect(cluster.StartComponent(localcluster.APIServer)).To(Succeed())
	g.Eventually(func() error {
		_, err := clientset.CoreV1().ConfigMaps("default").Get(ctx, "survives", metav1.GetOptions{})
		return err
	}).WithTimeout(30*time.Second).Should(Succeed(), "etcd kept the data")
}

func TestMissingBinaryFolderIsNamed(t *testing.T) {
	g := NewWithT(t)
	empty := t.TempDir()
	_, err := localcluster.Start(t.Context(), localcluster.Options{BinDir: empty})
	g.Expect(err).To(MatchError(And(
		ContainSubstring("etcd is missing"),
		ContainSubstring(empty),
		ContainSubstring("make kube-binaries"))))
}

func TestTakenPortIsNamed(t *testing.T) {
	g := NewWithT(t)
	requireBinaries(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	_, err = localcluster.Start(t.Context(), localcluster.Options{APIServerPort: port})
	g.Expect(err).To(MatchError(ContainSubstring("already in use")))
}

// A component that fails at start makes Start fail at once, with the end of
// its log and the log's path.
func TestComponentFailingAtStartIsReportedWithItsLog(t *testing.T) {
	g := NewWithT(t)
	requireBinaries(t)
	binDir := t.TempDir()
	real := os.Getenv(localcluster.BinDirEnv)
	entries, err := os.ReadDir(real)
	g.Expect(err).NotTo(HaveOccurred())
	for _, entry := range entries {
		g.Expect(os.Symlink(filepath.Join(real, entry.Name()), filepath.Join(binDir, entry.Name()))).To(Succeed())
	}
	g.Expect(os.Remove(filepath.Join(binDir, "kube-apiserver"))).To(Succeed())
	script := "#!/bin/sh\necho 'E1130 cannot open /etc/broken.conf: permission denied' >&2\nexit 3\n"
	g.Expect(os.WriteFile(filepath.Join(binDir, "kube-apiserver"), []byte(script), 0o755)).To(Succeed())

	began := time.Now()
	stateDir := t.TempDir()
	_, err = localcluster.Start(t.Context(), localcluster.Options{BinDir: binDir, Dir: stateDir})
	g.Expect(err).To(HaveOccurred())
	var componentErr *localcluster.ComponentError
	g.Expect(errors.As(err, &componentErr)).To(BeTrue(), "error: %v", err)
	g.Expect(componentErr.Component).To(Equal("kube-apiserver"))
	g.Expect(err.Error()).To(And(
		ContainSubstring("exit status 3"),
		ContainSubstring("cannot open /etc/broken.conf"),
		ContainSubstring(filepath.Join(stateDir, "kube-apiserver.log"))))
	g.Expect(time.Since(began)).To(BeNumerically("<", 20*time.Second), "no wait for a timeout")
	g.Expect(strings.Count(err.Error(), "\n")).To(BeNumerically("<", 20))
}
