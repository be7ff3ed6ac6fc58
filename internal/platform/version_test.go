package platform

import (
	"runtime/debug"
	"testing"
)

func TestBuildVersion(t *testing.T) {
	vcs := func(revision, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: revision}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "4f1c2a9b3e07d5c8a1b2c3d4e5f60718293a4b5c"
	tests := map[string]struct {
		set  string
		info *debug.BuildInfo
		want string
	}{
		"set by -ldflags":               {set: "v1.2.3", info: &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}}, want: "v1.2.3"},
		"set to a git describe":         {set: "v1.2.3-4-g4f1c2a9-dirty", want: "v1.2.3-4-g4f1c2a9-dirty"},
		"go install MODULE@v1.2.3":      {set: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, want: "v1.2.3"},
		"go build in a clean work tree": {set: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, want: "dev-4f1c2a9b3e07"},
		"go build with changes":         {set: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, want: "dev-4f1c2a9b3e07-dirty"},
		"no VCS information":            {set: "dev", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, want: "dev"},
		"no build information":          {set: "dev", want: "dev"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := buildVersion(tt.set, tt.info); got != tt.want {
				t.Errorf("buildVersion(%q) = %q, want %q", tt.set, got, tt.want)
			}
		})
	}
}
