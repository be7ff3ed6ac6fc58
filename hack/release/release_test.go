// Package release holds the test of release.sh, which make release runs.
package release

import (
	"bytes"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// make release VERSION=v9.8.7: install.yaml and the chart differ from the
// committed ones by the version alone, the binaries print it, the chart's
// archive holds the chart, and the committed deploy/ and charts/ are left
// as they were.
func TestReleasePinsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries: skipped in -short mode")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// The committed image's tag, such as v0.1.0.
	_, tag, _ := strings.Cut(regexp.MustCompile(`image: (\S+)`).FindStringSubmatch(read(t, filepath.Join(root, "deploy/base/deployment.yaml")))[1], ":")
	before := treeSums(t, root, "deploy", "charts")
	out := filepath.Join(t.TempDir(), "release")
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "hack/release/release.sh"))
	cmd.Env = append(os.Environ(), "VERSION=v9.8.7", "OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	if after := treeSums(t, root, "deploy", "charts"); after != before {
		t.Error("release.sh changed the committed deploy/ or charts/")
	}

	for committed, released := range map[string]string{
		"deploy/install.yaml":                          "install.yaml",
		"deploy/overlays/namespaced/install.yaml":      "install-namespaced.yaml",
		"charts/platform-operator/Chart.yaml":          "charts/platform-operator/Chart.yaml",
		"charts/platform-operator/values.yaml":         "charts/platform-operator/values.yaml",
		"charts/platform-operator/templates/base.yaml": "charts/platform-operator/templates/base.yaml",
	} {
		want := strings.NewReplacer("example.com/platform-operator:"+tag, "example.com/platform-operator:v9.8.7",
			"version: "+strings.TrimPrefix(tag, "v"), "version: 9.8.7", "appVersion: "+tag, "appVersion: v9.8.7",
			`tag: "`+tag+`"`, `tag: "v9.8.7"`).Replace(read(t, filepath.Join(root, committed)))
		got := read(t, filepath.Join(out, released))
		if got != want {
			t.Errorf("%s is not %s with version v9.8.7", released, committed)
		}
		if strings.Contains(got, ":"+tag) || strings.Contains(got, "Version: "+tag) {
			t.Errorf("%s still names %s", released, tag)
		}
	}
	for _, bin := range []string{"platform-operator --version", "platform-operator version", "kubectl-platform version"} {
		args := strings.Fields(bin)
		b, err := exec.CommandContext(t.Context(), filepath.Join(out, args[0]), args[1:]...).CombinedOutput()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(b)), "v9.8.7") {
			t.Errorf("%s: %v, %q", bin, err, b)
		}
	}
	list, err := exec.CommandContext(t.Context(), "tar", "tzf", filepath.Join(out, "platform-operator-9.8.7.tgz")).Output()
	if err != nil || !bytes.Contains(list, []byte("platform-operator/Chart.yaml")) {
		t.Errorf("the chart's archive: %v\n%s", err, list)
	}
	check := exec.CommandContext(t.Context(), "sha256sum", "--check", "--quiet", "SHA256SUMS")
	check.Dir = out
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("SHA256SUMS: %v\n%s", err, b)
	}

	// A version that is not vX.Y.Z is refused, and so is a folder that
	// holds something else.
	bad := exec.CommandContext(t.Context(), filepath.Join(root, "hack/release/release.sh"))
	bad.Env = append(os.Environ(), "VERSION=9.8.7", "OUT="+out)
	if b, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(b), "VERSION must be vMAJOR.MINOR.PATCH") {
		t.Errorf("VERSION=9.8.7: %v\n%s", err, b)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad = exec.CommandContext(t.Context(), filepath.Join(root, "hack/release/release.sh"))
	bad.Env = append(os.Environ(), "VERSION=v9.8.7", "OUT="+other)
	if b, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(b), "refusing to replace it") {
		t.Errorf("OUT holding another file: %v\n%s", err, b)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// treeSums is one line per file under dirs of root: its path and SHA-256.
func treeSums(t *testing.T, root string, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			b.WriteString(path)
			b.WriteString(" ")
			sum := sha256.Sum256(data)
			b.Write(sum[:])
			b.WriteString("\n")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
