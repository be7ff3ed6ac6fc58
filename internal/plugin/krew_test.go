package plugin

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The krew manifest template, once hack/krew-manifest.sh has filled it
// in, is a krew Plugin whose every platform installs this binary, and
// leaves no placeholder the script does not fill.
func TestKrewManifestTemplate(t *testing.T) {
	data, err := os.ReadFile("../../deploy/krew/platform.yaml")
	if err != nil {
		t.Fatal(err)
	}
	filled := map[string]bool{"VERSION": true, "URL": true, "HOMEPAGE": true}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		filled["SHA256_"+p] = true
	}
	text := regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(string(data), func(m string) string {
		name := strings.Trim(m, "${}")
		if !filled[name] {
			t.Errorf("placeholder %s is not filled by hack/krew-manifest.sh", m)
		}
		return "x"
	})
	var plugin struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Caveats          string `json:"caveats"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				}
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			}
		}
	}
	if err := yaml.UnmarshalStrict([]byte(text), &plugin); err != nil {
		t.Fatalf("the filled-in manifest: %v", err)
	}
	if plugin.Kind != "Plugin" || plugin.Metadata.Name != "platform" || len(plugin.Spec.Platforms) != 4 {
		t.Errorf("got kind %q, name %q (kubectl platform), %d platforms", plugin.Kind, plugin.Metadata.Name, len(plugin.Spec.Platforms))
	}
	for _, p := range plugin.Spec.Platforms {
		if p.Bin != Name || p.SHA256 == "" || p.URI == "" {
			t.Errorf("platform %v: bin %q, sha256 %q, uri %q", p.Selector.MatchLabels, p.Bin, p.SHA256, p.URI)
		}
	}
}
