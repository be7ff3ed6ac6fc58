package localcluster_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	. "github.com/onsi/gomega"

	"example.com/platform-operator/internal/localcluster"
)

// The object store serves S3 to the identity the cluster made, at an
// address of the PostgreSQL network (which the pods reach), and refuses
// anonymous requests; a store stopped and started again keeps its objects.
func TestObjectStoreServesS3(t *testing.T) {
	binDir := os.Getenv(localcluster.ObjectStoreBinDirEnv)
	if binDir == "" {
		t.Skipf("%s is not set: make test builds SeaweedFS (hack/seaweedfs.sh) and sets it", localcluster.ObjectStoreBinDirEnv)
	}
	g := NewWithT(t)
	cluster, _ := startCluster(t, localcluster.Options{Simulations: true, InstanceBinary: fakeInstanceBinary(t), ObjectStoreBinDir: binDir})
	store, ok := cluster.ObjectStore()
	g.Expect(ok).To(BeTrue())
	g.Expect(store.Endpoint).To(HavePrefix("http://10.201."), "an address of the PostgreSQL network")

	ctx := t.Context()
	s3c := s3.New(s3.Options{
		BaseEndpoint: aws.String(store.Endpoint), Region: store.Region, UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(store.AccessKeyID, store.SecretAccessKey, ""),
	})
	_, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("wal")})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("wal"), Key: aws.String("db/000000010000000000000001"), Body: bytes.NewReader([]byte("segment"))})
	g.Expect(err).NotTo(HaveOccurred())

	anonymous, err := http.Get(store.Endpoint + "/wal/db/000000010000000000000001")
	g.Expect(err).NotTo(HaveOccurred())
	anonymous.Body.Close()
	g.Expect(anonymous.StatusCode).To(Equal(http.StatusForbidden), "an anonymous read")

	g.Expect(cluster.StopComponent(localcluster.ObjectStoreComponent)).To(Succeed())
	g.Expect(cluster.StartComponent(localcluster.ObjectStoreComponent)).To(Succeed())
	g.Eventually(func(g Gomega) {
		out, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("wal"), Key: aws.String("db/000000010000000000000001")})
		g.Expect(err).NotTo(HaveOccurred())
		defer out.Body.Close()
		data, err := io.ReadAll(out.Body)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(data)).To(Equal("segment"))
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}
