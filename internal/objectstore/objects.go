package objectstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrNotFound is what reading an object that is not there returns.
var ErrNotFound = errors.New("not in the object store")

// digestKey is the user metadata that holds an object's SHA-256, so that
// whether the store holds the same content can be asked without reading
// the object back.
const digestKey = "sha256"

// digest is data's SHA-256, hex.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// put stores data at name and confirms it: an object is reported stored
// only once the store answered the write and holds that many bytes, with
// data's digest.
func (c *Client) put(ctx context.Context, name string, data []byte) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	key := c.key(name)
	sum := digest(data)
	if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(c.loc.Bucket), Key: aws.String(key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		Metadata: map[string]string{digestKey: sum},
	}); err != nil {
		return fmt.Errorf("write %s to %s: %w", key, c.loc, err)
	}
	stored, err := c.head(ctx, name)
	if err != nil {
		return fmt.Errorf("confirm %s: %w", key, err)
	}
	if stored.size != int64(len(data)) {
		return fmt.Errorf("confirm %s: the store holds %d bytes of %d", key, stored.size, len(data))
	}
	return nil
}

// stored is what the store says of an object without reading it.
type stored struct {
	size int64
	// digest is its SHA-256 as written by put; "" when it has none.
	digest string
}

// head is what the store says of the object at name; ErrNotFound when
// there is none.
func (c *Client) head(ctx context.Context, name string) (stored, error) {
	key := c.key(name)
	out, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(c.loc.Bucket), Key: aws.String(key)})
	if notFound(err) {
		return stored{}, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return stored{}, fmt.Errorf("read %s of %s: %w", key, c.loc, err)
	}
	st := stored{size: aws.ToInt64(out.ContentLength)}
	for k, v := range out.Metadata {
		// Stores and HTTP differ on the case of metadata names.
		if strings.EqualFold(k, digestKey) {
			st.digest = v
		}
	}
	return st, nil
}

// putStream stores what r gives at name, in parts, without holding it
// whole: a base backup is as large as the database.
func (c *Client) putStream(ctx context.Context, name string, r io.Reader) error {
	key := c.key(name)
	tm := transfermanager.New(c.s3)
	if _, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket: aws.String(c.loc.Bucket), Key: aws.String(key), Body: r,
	}); err != nil {
		return fmt.Errorf("write %s to %s: %w", key, c.loc, err)
	}
	return nil
}

// get opens the object at name; ErrNotFound when there is none. The
// caller closes it.
func (c *Client) get(ctx context.Context, name string) (io.ReadCloser, error) {
	key := c.key(name)
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.loc.Bucket), Key: aws.String(key)})
	if notFound(err) {
		return nil, fmt.Errorf("%s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", key, c.loc, err)
	}
	return out.Body, nil
}

// getAll reads the whole object at name.
func (c *Client) getAll(ctx context.Context, name string) ([]byte, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	body, err := c.get(ctx, name)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", c.key(name), c.loc, err)
	}
	return data, nil
}

// Object is one stored object, by its name under the prefix.
type Object struct {
	Name string
	Size int64
}

// list lists the objects whose names start with prefix (under the
// client's own), at most limit of them (0: all).
func (c *Client) list(ctx context.Context, prefix string, limit int) ([]Object, error) {
	full := c.key(prefix)
	base := c.key("")
	if c.loc.Prefix != "" && prefix == "" {
		full, base = c.loc.Prefix+"/", c.loc.Prefix+"/"
	}
	var objects []Object
	pages := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{Bucket: aws.String(c.loc.Bucket), Prefix: aws.String(full)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list %s of %s: %w", full, c.loc, err)
		}
		for _, o := range page.Contents {
			objects = append(objects, Object{Name: strings.TrimPrefix(aws.ToString(o.Key), base), Size: aws.ToInt64(o.Size)})
			if limit > 0 && len(objects) >= limit {
				return objects, nil
			}
		}
	}
	return objects, nil
}

// remove deletes the objects of names; deleting one that is gone is no
// error.
func (c *Client) remove(ctx context.Context, names []string) error {
	for start := 0; start < len(names); start += 1000 {
		batch := names[start:min(start+1000, len(names))]
		ids := make([]types.ObjectIdentifier, len(batch))
		for i, n := range batch {
			ids[i] = types.ObjectIdentifier{Key: aws.String(c.key(n))}
		}
		out, err := c.s3.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(c.loc.Bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("delete %d objects of %s: %w", len(batch), c.loc, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s of %s: %s", aws.ToString(e.Key), c.loc, aws.ToString(e.Message))
		}
	}
	return nil
}

// EnsureBucket makes the bucket when it is missing.
func (c *Client) EnsureBucket(ctx context.Context) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	_, err := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(c.loc.Bucket)})
	if err == nil {
		return nil
	}
	if !notFound(err) {
		return fmt.Errorf("read bucket %s at %s: %w", c.loc.Bucket, c.loc.Endpoint, err)
	}
	if _, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(c.loc.Bucket)}); err != nil {
		return fmt.Errorf("make bucket %s at %s: %w", c.loc.Bucket, c.loc.Endpoint, err)
	}
	return nil
}

// notFound tells an answer that the object or bucket is not there.
func notFound(err error) bool {
	var nk *types.NoSuchKey
	var nb *types.NoSuchBucket
	var nf *types.NotFound
	if errors.As(err, &nk) || errors.As(err, &nb) || errors.As(err, &nf) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NoSuchBucket")
}
