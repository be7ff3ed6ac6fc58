package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"
)

const (
	testVersion = "v1.2.3-test"
	testTag     = "example.com/platform-operator:" + testVersion
)

// elfMachine is the ELF machine each image's binary must be built for.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestBuild builds the real images and reads them back the way a registry
// client or docker would; built again, they have the same digests.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles the operator twice")
	}
	g := NewWithT(t)
	opts := testOptions(t.TempDir())
	res, err := build(t.Context(), opts)
	g.Expect(err).NotTo(HaveOccurred())

	idx := namedIndex(t, res.LayoutDir, testVersion)
	digest, err := idx.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(digest).To(Equal(res.Index), "printed index digest")

	im, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(im.Manifests).To(HaveLen(2))
	var platforms []string
	for _, desc := range im.Manifests {
		g.Expect(desc.MediaType).To(Equal(types.OCIManifestSchema1))
		g.Expect(desc.Platform).NotTo(BeNil())
		p := *desc.Platform
		platforms = append(platforms, p.String())
		t.Run(p.String(), func(t *testing.T) {
			img, err := idx.Image(desc.Digest)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			checkConfig(t, img, p)
			checkLayer(t, img, p)
			checkTarball(t, opts.OutDir, img, p)
		})
	}
	g.Expect(platforms).To(ConsistOf("linux/amd64", "linux/arm64/v8"))

	// Reproducible: the same sources and toolchain give the same digests,
	// from another output folder, another work folder and another time
	// (the operator is linked again; the compiled packages come from Go's
	// build cache, and Go's compiler is deterministic).
	again, err := build(t.Context(), testOptions(t.TempDir()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Index).To(Equal(res.Index), "the index digest of a second build")
	g.Expect(again.Images).To(HaveLen(len(res.Images)))
	for i, first := range res.Images {
		g.Expect(again.Images[i].Manifest).To(Equal(first.Manifest), "manifest digest for %s", first.Platform)
		g.Expect(again.Images[i].Config).To(Equal(first.Config), "config digest (image ID) for %s", first.Platform)
		g.Expect(again.Images[i].TarSize).To(Equal(first.TarSize), "docker tarball for %s", first.Platform)
	}
}

// TestSameBinaryGivesTheSameImage checks, without compiling, that the
// image made around a binary depends on its content only: nothing of the
// time or the work folder leaks into it. (TestBuild checks that whole
// builds are reproducible.)
func TestSameBinaryGivesTheSameImage(t *testing.T) {
	g := NewWithT(t)
	bin := filepath.Join(t.TempDir(), "platform-operator")
	g.Expect(os.WriteFile(bin, []byte("not really a binary"), 0o600)).To(Succeed())
	p := defaultPlatforms[1]

	var digests []v1.Hash
	for range 2 {
		img, err := binaryImage(bin, p, testVersion, t.TempDir())
		g.Expect(err).NotTo(HaveOccurred())
		d, err := img.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		digests = append(digests, d)
		time.Sleep(1100 * time.Millisecond) // a clock-dependent field would differ
	}
	g.Expect(digests[1]).To(Equal(digests[0]))

	other, err := binaryImage(bin, p, "v0-other", t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Digest()).NotTo(Equal(digests[0]), "the digest depends on the content")
}

func testOptions(out string) options {
	return options{
		Version:   testVersion,
		LDFlags:   "-s -w -X " + versionVar + "=" + testVersion,
		OutDir:    out,
		Tag:       testTag,
		RepoDir:   "../..", // go test runs in the package directory
		Platforms: defaultPlatforms,
	}
}

// namedIndex opens the OCI layout at dir and returns the image index that
// index.json names ref, checking it is the only entry.
func namedIndex(t *testing.T, dir, ref string) v1.ImageIndex {
	t.Helper()
	g := NewWithT(t)
	top, err := layout.ImageIndexFromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())
	m, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Manifests).To(HaveLen(1))
	desc := m.Manifests[0]
	g.Expect(desc.MediaType).To(Equal(types.OCIImageIndex))
	g.Expect(desc.Annotations).To(HaveKeyWithValue(refNameAnnotation, ref))
	idx, err := top.ImageIndex(desc.Digest)
	g.Expect(err).NotTo(HaveOccurred())
	return idx
}

func checkConfig(t *testing.T, img v1.Image, p v1.Platform) {
	g := NewWithT(t)
	cf, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cf.OS).To(Equal(p.OS))
	g.Expect(cf.Architecture).To(Equal(p.Architecture))
	g.Expect(cf.Variant).To(Equal(p.Variant))
	g.Expect(cf.Created.Time.Equal(time.Unix(0, 0))).To(BeTrue(), "created %v", cf.Created)
	g.Expect(cf.Config.User).To(Equal("65532:65532"))
	g.Expect(cf.Config.Entrypoint).To(Equal([]string{"/platform-operator"}))
	g.Expect(cf.Config.WorkingDir).To(Equal("/"))
	g.Expect(cf.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", testVersion))
	g.Expect(cf.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.title", "platform-operator"))
	g.Expect(cf.RootFS.DiffIDs).To(HaveLen(1))
}

// checkLayer reads the only layer and checks the files the operator needs.
func checkLayer(t *testing.T, img v1.Image, p v1.Platform) {
	g := NewWithT(t)
	layers, err := img.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layers).To(HaveLen(1))
	headers, files := readLayer(t, layers[0])

	for name, h := range headers {
		g.Expect(h.ModTime.Equal(time.Unix(0, 0))).To(BeTrue(), "mtime of %s: %v", name, h.ModTime)
	}
	g.Expect(headers).To(HaveKey("platform-operator"))
	bin := headers["platform-operator"]
	g.Expect(bin.Typeflag).To(Equal(byte(tar.TypeReg)))
	g.Expect(bin.Mode).To(Equal(int64(0o755)))
	g.Expect(bin.Uid).To(Equal(0))
	f, err := elf.NewFile(bytes.NewReader(files["platform-operator"]))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Machine).To(Equal(elfMachine[p.Architecture]))
	g.Expect(f.Type).To(Equal(elf.ET_EXEC), "static, not position-independent with an interpreter")
	g.Expect(f.Progs).NotTo(ContainElement(HaveField("Type", elf.PT_INTERP)), "static binary")
	g.Expect(string(files["platform-operator"])).To(ContainSubstring(testVersion), "version set by -ldflags")

	g.Expect(string(files["etc/passwd"])).To(ContainSubstring("\nnonroot:x:65532:65532:"))
	g.Expect(string(files["etc/group"])).To(ContainSubstring("\nnonroot:x:65532:"))
	g.Expect(headers).To(HaveKey("tmp/"))
	g.Expect(headers["tmp/"].Typeflag).To(Equal(byte(tar.TypeDir)))
	g.Expect(headers["tmp/"].Mode).To(Equal(int64(0o1777)))
}

// readLayer returns the layer's tar headers and file contents by name.
func readLayer(t *testing.T, l v1.Layer) (map[string]*tar.Header, map[string][]byte) {
	g := NewWithT(t)
	rc, err := l.Uncompressed()
	g.Expect(err).NotTo(HaveOccurred())
	defer rc.Close()
	headers, files := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return headers, files
		}
		g.Expect(err).NotTo(HaveOccurred())
		headers[h.Name] = h
		files[h.Name], err = io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// checkTarball loads the docker tarball for p by its tag and checks it is
// the same image as in the index.
func checkTarball(t *testing.T, out string, img v1.Image, p v1.Platform) {
	g := NewWithT(t)
	tag, err := name.NewTag(testTag)
	g.Expect(err).NotTo(HaveOccurred())
	loaded, err := tarball.ImageFromPath(filepath.Join(out, "platform-operator-linux-"+p.Architecture+".tar"), &tag)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := loaded.ConfigName()
	g.Expect(err).NotTo(HaveOccurred())
	want, err := img.ConfigName()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(want))
}

func TestParseFlags(t *testing.T) {
	g := NewWithT(t)
	opts, err := parseFlags([]string{"-version", "v9", "-out", "dist"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.LDFlags).To(Equal("-s -w -X example.com/platform-operator/internal/platform.Version=v9"))
	g.Expect(opts.Tag).To(Equal("platform-operator:v9"))
	g.Expect(opts.OutDir).To(Equal("dist"))

	opts, err = parseFlags([]string{"-ldflags", "-X a.b=c", "-tag", "r.example/op:x"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(opts.LDFlags).To(Equal("-X a.b=c"))
	g.Expect(opts.Tag).To(Equal("r.example/op:x"))

	_, err = parseFlags([]string{"-nope"})
	g.Expect(err).To(MatchError(ContainSubstring("-nope")))
	_, err = parseFlags([]string{"extra"})
	g.Expect(err).To(MatchError(ContainSubstring(`unexpected argument "extra"`)))
}

func TestBuildRejectsBadTag(t *testing.T) {
	_, err := build(t.Context(), options{Tag: "Not A Tag", OutDir: t.TempDir(), Platforms: defaultPlatforms})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("bad -tag")))
}
