package operator

import (
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/backupjob"
	"example.com/platform-operator/internal/controller/postgrescluster"
	"example.com/platform-operator/internal/controller/tenant"
	"example.com/platform-operator/internal/controller/website"
)

// registry lists every controller the operator can run, one line per kind.
// --controllers chooses among them by Descriptor.Name.
var registry = []controller.Descriptor{
	website.Descriptor(),
	tenant.Descriptor(),
	backupjob.Descriptor(),
	postgrescluster.Descriptor(),
}

// Controllers returns the descriptors of every controller the operator can
// run, for tools and tests that need its scheme or names.
func Controllers() []controller.Descriptor {
	return append([]controller.Descriptor(nil), registry...)
}
