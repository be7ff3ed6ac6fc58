// Command image builds the platform-operator container image without Docker.
//
// Usage, from the repository root:
//
//	go run ./hack/image -version V -ldflags 'LDFLAGS' -out DIR -tag NAME:TAG
//
// It cross-compiles static binaries of ./cmd/platform-operator for linux/amd64
// and linux/arm64 and puts each on a tiny "distroless-style" base that the
// tool makes itself (no base image is pulled): /etc/passwd and /etc/group
// with the nonroot user 65532, a world-writable /tmp, and the binary as
// /platform-operator, run as 65532:65532. File times and the image creation
// time are fixed at the Unix epoch, so the same sources and toolchain give the
// same digests.
//
// It writes:
//
//	DIR/oci                               OCI image layout; its index.json
//	                                      holds one multi-arch image index
//	                                      named TAG (org.opencontainers.image.ref.name)
//	DIR/platform-operator-linux-amd64.tar  docker-save tarball tagged NAME:TAG
//	DIR/platform-operator-linux-arm64.tar  docker-save tarball tagged NAME:TAG
//
// Publish the multi-arch image with either of
//
//	crane push DIR/oci REGISTRY/platform-operator:TAG
//	skopeo copy --all oci:DIR/oci:TAG docker://REGISTRY/platform-operator:TAG
//
// (not `crane push --index`: that would push index.json itself, an index
// wrapping the multi-arch index).
//
// and load one platform locally with `docker load -i DIR/platform-operator-linux-amd64.tar`
// or `kind load image-archive DIR/platform-operator-linux-amd64.tar`.
//
// -ldflags defaults to "-s -w -X example.com/platform-operator/internal/platform.Version=V"
// and -tag to platform-operator:V.
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"example.com/platform-operator/internal/platform"
)

const (
	// versionVar is the variable the operator reports as its version.
	versionVar = "example.com/platform-operator/internal/platform.Version"
	// binaryName is both the go build output and the file in the image.
	binaryName = platform.Name
	// nonroot is the uid and gid the operator runs as, as in distroless.
	nonroot = 65532
	// refNameAnnotation names an entry of an OCI layout's index.json; tools
	// such as skopeo select the image by it (oci:DIR:TAG).
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

// defaultPlatforms are the platforms the image is built for. arm64 carries
// variant v8 as docker buildx writes it, so platform matching is exact.
var defaultPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// epoch is every timestamp in the image: fixed times make the digests
// depend only on the content.
var epoch = time.Unix(0, 0).UTC()

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

// run parses the command line, builds the images and prints what it wrote.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	opts, err := parseFlags(args)
	if err != nil {
		return err
	}
	res, err := build(ctx, opts)
	if err != nil {
		return err
	}
	res.print(stdout)
	return nil
}

// parseFlags turns the command line into build options. Flag errors are
// returned rather than printed so main reports them in one line.
func parseFlags(args []string) (options, error) {
	flags := flag.NewFlagSet("image", flag.ContinueOnError)
	flags.SetOutput(io.Discard)
	version := flags.String("version", "dev", "version reported by the operator and put in the image label")
	ldflags := flags.String("ldflags", "", `go build -ldflags (default "-s -w -X `+versionVar+`=VERSION")`)
	out := flags.String("out", "bin/image", "output directory")
	tag := flags.String("tag", "", "image name and tag, NAME:TAG (default platform-operator:VERSION)")

	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			flags.SetOutput(os.Stdout)
			fmt.Fprintln(os.Stdout, "usage: go run ./hack/image -version V -ldflags 'LDFLAGS' -out DIR -tag NAME:TAG")
			flags.PrintDefaults()
		}
		return options{}, err
	}
	if flags.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected argument %q", flags.Arg(0))
	}

	opts := options{
		Version:   *version,
		LDFlags:   *ldflags,
		OutDir:    *out,
		Tag:       *tag,
		RepoDir:   ".",
		Platforms: defaultPlatforms,
	}
	if opts.LDFlags == "" {
		opts.LDFlags = "-s -w -X " + versionVar + "=" + opts.Version
	}
	if opts.Tag == "" {
		opts.Tag = "platform-operator:" + opts.Version
	}
	return opts, nil
}

// options says what to build and where.
type options struct {
	Version   string        // version label of the image
	LDFlags   string        // go build -ldflags
	OutDir    string        // directory the outputs are written to
	Tag       string        // NAME:TAG of the docker tarballs; TAG names the layout entry
	RepoDir   string        // repository root, where go build runs
	Platforms []v1.Platform // platforms to build, linux only
}

// result describes what build wrote.
type result struct {
	LayoutDir  string // the OCI layout
	LayoutSize int64  // bytes of all files in the layout
	Index      v1.Hash
	RefName    string // the layout's ref name of the index (the tag part)
	Images     []imageResult
}

// imageResult describes one platform's image.
type imageResult struct {
	Platform v1.Platform
	Manifest v1.Hash // digest of the image manifest in the index
	Config   v1.Hash // config digest, the image ID docker shows
	TarPath  string  // docker-save tarball
	TarSize  int64
}

// build compiles the operator for every platform, assembles one image per
// platform and writes the OCI layout and the docker tarballs.
func build(ctx context.Context, opts options) (*result, error) {
	tag, err := name.NewTag(opts.Tag)
	if err != nil {
		return nil, fmt.Errorf("bad -tag %q, want NAME:TAG: %w", opts.Tag, err)
	}
	if len(opts.Platforms) == 0 {
		return nil, errors.New("no platforms to build")
	}
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("creating output directory: %w", err)
	}
	tmp, err := os.MkdirTemp("", "platform-operator-image-")
	if err != nil {
		return nil, fmt.Errorf("creating work directory: %w", err)
	}
	defer os.RemoveAll(tmp)

	images := make([]v1.Image, len(opts.Platforms))
	for i, p := range opts.Platforms {
		if images[i], err = platformImage(ctx, opts, p, filepath.Join(tmp, platformDir(p))); err != nil {
			return nil, fmt.Errorf("image for %s: %w", p, err)
		}
	}

	res := &result{LayoutDir: filepath.Join(opts.OutDir, "oci"), RefName: tag.TagStr()}
	if err := res.writeLayout(multiArchIndex(images, opts.Platforms)); err != nil {
		return nil, fmt.Errorf("writing OCI layout %s: %w", res.LayoutDir, err)
	}
	for i, img := range images {
		ir, err := writeTarball(opts.OutDir, tag, opts.Platforms[i], img)
		if err != nil {
			return nil, fmt.Errorf("writing docker tarball for %s: %w", opts.Platforms[i], err)
		}
		res.Images = append(res.Images, ir)
	}
	return res, nil
}

// platformDir is a file-name-safe name of a platform: linux-arm64-v8.
func platformDir(p v1.Platform) string {
	return strings.ReplaceAll(p.String(), "/", "-")
}

// platformImage compiles the operator for p in dir and wraps it in an image.
func platformImage(ctx context.Context, opts options, p v1.Platform, dir string) (v1.Image, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	bin := filepath.Join(dir, binaryName)
	if err := goBuild(ctx, opts, p, bin); err != nil {
		return nil, err
	}
	return binaryImage(bin, p, opts.Version, dir)
}

// binaryImage makes the image for p around the operator binary bin, writing
// the layer into dir.
func binaryImage(bin string, p v1.Platform, version, dir string) (v1.Image, error) {
	layerPath := filepath.Join(dir, "layer.tar")
	if err := writeLayerTar(layerPath, bin); err != nil {
		return nil, fmt.Errorf("writing layer: %w", err)
	}
	// Caching the gzip keeps the layout and the tarball from compressing
	// the same layer again.
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("reading layer: %w", err)
	}
	return assembleImage(layer, p, version)
}

// goBuild compiles a static operator binary for p to out.
func goBuild(ctx context.Context, opts options, p v1.Platform, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", opts.LDFlags,
		"-o", out, "./cmd/"+binaryName)
	cmd.Dir = opts.RepoDir
	// CGO off gives a static binary that runs on the empty base. The
	// microarchitecture levels are pinned to the baselines so a GOAMD64 or
	// GOARM64 in the caller's environment can't make an image that some
	// amd64/arm64 nodes can't run.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0")
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, bytes.TrimSpace(output))
	}
	return nil
}

// tarEntry is one file or directory of the image's only layer.
type tarEntry struct {
	name     string // path without the leading slash; directories end in /
	mode     int64
	uid      int
	body     []byte // file content; nil for a directory
	bodyPath string // file content read from disk, for the binary
}

// Files that make the empty base usable: a passwd and group so the nonroot
// user has a name and a home (some libraries look it up), the homes
// themselves, and a /tmp that every user may write with the sticky bit set.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// layerEntries lists the layer in the order it is written; the order is
// part of the layer digest, so it is fixed.
func layerEntries(binary string) []tarEntry {
	return []tarEntry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot},
		{name: "root/", mode: 0o700},
		{name: "tmp/", mode: 0o1777},
		{name: binaryName, mode: 0o755, bodyPath: binary},
	}
}

// writeLayerTar writes the layer as an uncompressed tar file at path.
func writeLayerTar(path, binary string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	for _, e := range layerEntries(binary) {
		if err := writeTarEntry(tw, e); err != nil {
			return fmt.Errorf("adding /%s: %w", e.name, err)
		}
	}
	return tw.Close()
}

// writeTarEntry writes one entry owned by e.uid (group the same) at the epoch.
func writeTarEntry(tw *tar.Writer, e tarEntry) error {
	h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: epoch}
	var body io.Reader
	switch {
	case strings.HasSuffix(e.name, "/"):
		h.Typeflag = tar.TypeDir
	case e.bodyPath != "":
		f, err := os.Open(e.bodyPath)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		h.Typeflag, h.Size, body = tar.TypeReg, st.Size(), f
	default:
		h.Typeflag, h.Size, body = tar.TypeReg, int64(len(e.body)), bytes.NewReader(e.body)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if body == nil {
		return nil
	}
	_, err := io.Copy(tw, body)
	return err
}

// assembleImage puts layer on an empty OCI image and sets the config: run
// /platform-operator as nonroot, for platform p.
func assembleImage(layer v1.Layer, p v1.Platform, version string) (v1.Image, error) {
	// empty.Image uses Docker media types; registries and containerd prefer
	// OCI ones in an OCI index.
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "go run ./hack/image",
			Comment:   "distroless-style base (passwd, group, /tmp) and /" + binaryName,
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile() // carries the layer's diff ID and history
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: epoch}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", nonroot, nonroot),
		Entrypoint: []string{"/" + binaryName},
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
		Labels: map[string]string{
			"org.opencontainers.image.title":   binaryName,
			"org.opencontainers.image.version": version,
		},
	}
	return mutate.ConfigFile(img, cf)
}

// multiArchIndex is the OCI image index of images, one per platform.
func multiArchIndex(images []v1.Image, platforms []v1.Platform) v1.ImageIndex {
	adds := make([]mutate.IndexAddendum, len(images))
	for i, img := range images {
		p := platforms[i]
		adds[i] = mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}}
	}
	return mutate.AppendManifests(empty.Index, adds...)
}

// writeLayout writes idx as the single, named entry of a fresh OCI layout.
// The multi-arch index is nested rather than listed flat in index.json so
// that one name selects all platforms: `crane push DIR/oci REF` and
// `skopeo copy --all oci:DIR/oci:TAG ...` then push the whole index.
func (r *result) writeLayout(idx v1.ImageIndex) error {
	if err := resetLayoutDir(r.LayoutDir); err != nil {
		return err
	}
	named := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{
		Add:        idx,
		Descriptor: v1.Descriptor{Annotations: map[string]string{refNameAnnotation: r.RefName}},
	})
	if _, err := layout.Write(r.LayoutDir, named); err != nil {
		return err
	}
	var err error
	if r.Index, err = idx.Digest(); err != nil {
		return err
	}
	if r.LayoutSize, err = dirSize(r.LayoutDir); err != nil {
		return err
	}
	return nil
}

// resetLayoutDir removes a layout left by an earlier run, because writing a
// layout only adds blobs and the old ones would linger. Anything that is not
// an OCI layout is left alone.
func resetLayoutDir(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s exists and is not an OCI layout; remove it or choose another -out", dir)
	}
	return os.RemoveAll(dir)
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// writeTarball writes img for p as a docker-save tarball tagged tag, the
// format `docker load` and `kind load image-archive` read.
func writeTarball(outDir string, tag name.Tag, p v1.Platform, img v1.Image) (imageResult, error) {
	ir := imageResult{
		Platform: p,
		TarPath:  filepath.Join(outDir, fmt.Sprintf("%s-%s-%s.tar", binaryName, p.OS, p.Architecture)),
	}
	if err := tarball.WriteToFile(ir.TarPath, tag, img); err != nil {
		return ir, err
	}
	st, err := os.Stat(ir.TarPath)
	if err != nil {
		return ir, err
	}
	ir.TarSize = st.Size()
	if ir.Manifest, err = img.Digest(); err != nil {
		return ir, err
	}
	if ir.Config, err = img.ConfigName(); err != nil {
		return ir, err
	}
	return ir, nil
}

// print writes one line per output: its path, size and digests.
func (r *result) print(w io.Writer) {
	platforms := make([]string, len(r.Images))
	for i, ir := range r.Images {
		platforms[i] = ir.Platform.String()
	}
	fmt.Fprintf(w, "%s  %s  OCI layout, index %s named %q (%s)\n",
		r.LayoutDir, humanSize(r.LayoutSize), r.Index, r.RefName, strings.Join(platforms, ", "))
	for _, ir := range r.Images {
		fmt.Fprintf(w, "%s  %s  %s manifest %s config %s\n",
			ir.TarPath, humanSize(ir.TarSize), ir.Platform, ir.Manifest, ir.Config)
	}
}

// humanSize formats n bytes as MiB with one decimal.
func humanSize(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
