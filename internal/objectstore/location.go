package objectstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Location is where a cluster's backups live and how to reach them.
type Location struct {
	// Endpoint is the S3 endpoint, http:// or https://HOST[:PORT].
	Endpoint string `json:"endpoint"`
	// Bucket holds everything; Prefix is the cluster's path in it, without
	// a leading or trailing slash.
	Bucket string `json:"bucket"`
	Prefix string `json:"prefix"`
	// Region is the region requests are signed for.
	Region string `json:"region"`
	// AccessKeyID and SecretAccessKey are the identity of every request.
	AccessKeyID     string `json:"accessKeyId"`
	SecretAccessKey string `json:"secretAccessKey"`
	// CABundle, PEM, is trusted for an https endpoint besides the system's
	// roots; empty for the system's only.
	CABundle string `json:"caBundle,omitempty"`
	// Compress gzips WAL segments and base backups on upload. Reading
	// takes either: the name of what is stored says which it is.
	Compress bool `json:"compress"`
}

// DefaultRegion is signed for when a Location names none: S3-compatible
// stores other than AWS accept any.
const DefaultRegion = "us-east-1"

// Validate says what is missing or wrong in l, naming each field.
func (l Location) Validate() error {
	var problems []error
	u, err := url.Parse(l.Endpoint)
	switch {
	case l.Endpoint == "":
		problems = append(problems, errors.New("endpoint is empty"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		problems = append(problems, fmt.Errorf("endpoint %q is not an http:// or https:// URL", l.Endpoint))
	}
	if l.Bucket == "" {
		problems = append(problems, errors.New("bucket is empty"))
	}
	if strings.HasPrefix(l.Prefix, "/") || strings.HasSuffix(l.Prefix, "/") {
		problems = append(problems, fmt.Errorf("path %q starts or ends with a slash", l.Prefix))
	}
	if l.AccessKeyID == "" || l.SecretAccessKey == "" {
		problems = append(problems, errors.New("the access key ID or the secret access key is empty"))
	}
	return errors.Join(problems...)
}

// Client reads and writes one Location.
type Client struct {
	loc Location
	s3  *s3.Client
}

// requestTimeout bounds one request: a store that accepts the connection
// and never answers would otherwise hold an archive_command forever, and
// PostgreSQL retries a failed one by itself.
const requestTimeout = 2 * time.Minute

// New is a client of loc.
func New(loc Location) (*Client, error) {
	if err := loc.Validate(); err != nil {
		return nil, fmt.Errorf("object store: %w", err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if loc.CABundle != "" {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM([]byte(loc.CABundle)) {
			return nil, errors.New("object store: the CA bundle holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	region := loc.Region
	if region == "" {
		region = DefaultRegion
	}
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(loc.Endpoint),
		Region:       region,
		// Path-style requests (ENDPOINT/BUCKET/KEY): every S3-compatible
		// store serves them, virtual hosts need DNS for each bucket.
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(loc.AccessKeyID, loc.SecretAccessKey, ""),
		HTTPClient:   &http.Client{Transport: transport, Timeout: requestTimeout},
		// The SDK's default checksums on every request are newer than
		// several S3-compatible stores; ask for them only where required.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	return &Client{loc: loc, s3: client}, nil
}

// Location is the client's.
func (c *Client) Location() Location { return c.loc }

// key is the full key of name under the client's prefix.
func (c *Client) key(name string) string {
	if c.loc.Prefix == "" {
		return name
	}
	return c.loc.Prefix + "/" + name
}

// String names the location without its keys, for messages.
func (l Location) String() string {
	return fmt.Sprintf("s3://%s/%s at %s", l.Bucket, l.Prefix, l.Endpoint)
}

// withTimeout bounds ctx by requestTimeout.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, requestTimeout)
}
