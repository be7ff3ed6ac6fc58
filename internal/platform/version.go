package platform

import "runtime/debug"

// BuildVersion is the version the operator and the kubectl plugin print:
// Version when the build set it; else the module's version that go install
// MODULE@vX.Y.Z records; else dev, with the commit the build recorded
// (go build in a git work tree, unless -buildvcs=false), such as
// dev-4f1c2a9b3e07 or dev-4f1c2a9b3e07-dirty.
func BuildVersion() string {
	info, _ := debug.ReadBuildInfo()
	return buildVersion(Version, info)
}

func buildVersion(set string, info *debug.BuildInfo) string {
	if set != "dev" && set != "" {
		return set
	}
	if info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision == "" {
		return "dev"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if modified == "true" {
		return "dev-" + revision + "-dirty"
	}
	return "dev-" + revision
}
