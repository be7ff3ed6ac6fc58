package devenv

import (
	"context"
	"path/filepath"
)

// install applies what the options ask for before the operator starts:
// deploy/base with Components, or else Manifests (default
// DefaultManifests).
func (e *Environment) install(ctx context.Context) error {
	opts := e.opts
	if opts.Components != nil && opts.Manifests == nil {
		_, err := e.Applier.ApplyComponents(ctx, opts.RepoRoot, opts.Components)
		return err
	}
	manifests := opts.Manifests
	if manifests == nil {
		manifests = DefaultManifests
	}
	for _, m := range manifests {
		if _, err := e.Applier.ApplyPaths(ctx, filepath.Join(opts.RepoRoot, m)); err != nil {
			return err
		}
	}
	return nil
}
