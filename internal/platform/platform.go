// Package platform names the operator as a whole, in one place: the binary,
// its namespace, ServiceAccount, leader election Lease, field manager and
// the label that marks every object it manages. The kinds it serves keep
// their own names (Website, Tenant, BackupJob).
package platform

import (
	"errors"
	"os"
)

const (
	// Name is the operator's name: its binary, ServiceAccount, roles, field
	// manager, user agent and the value of ManagedByLabel.
	Name = "platform-operator"

	// Namespace is where deploy/ installs the operator, its Lease and its
	// ServiceAccount.
	Namespace = "platform-operator-system"

	// LeaseName is the default name of the leader election Lease.
	LeaseName = "platform-operator.example.com"

	// ManagedByLabel marks every object the operator manages, with the
	// value Name. The operator's caches hold only objects with this label,
	// which keeps them small on clusters with many unrelated objects.
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// LegacyName is the name the operator had when it served Websites only.
	// Children made then carry it in ManagedByLabel; the caches select them
	// too, and the next update relabels them.
	LegacyName = "website-operator"
)

// ErrNotLeader is returned, wrapped, for a write that the operator refused
// to send because this replica cannot be sure it still holds the leader
// election lease. A reconcile that meets it stops without reporting
// anything: the leader does the work, and the status and events are its to
// write.
var ErrNotLeader = errors.New("not the leader")

// ImageEnv names the environment variable that holds the operator's own
// image in its pod (deploy/base sets it from the image kustomize writes).
const ImageEnv = "OPERATOR_IMAGE"

// DefaultImage is the operator's own image, as its pod's environment says,
// else the image of this version: the image whose binary runs in the pods
// the operator makes (PostgreSQL instance managers, base backups).
func DefaultImage() string {
	if image := os.Getenv(ImageEnv); image != "" {
		return image
	}
	return "example.com/" + Name + ":latest"
}

// Version is the operator's and the kubectl plugin's version as the build
// set it with -ldflags "-X example.com/platform-operator/internal/platform.Version=..."
// (make build, make release, make image, make krew); "dev" when it did not.
// Read it through BuildVersion.
var Version = "dev"
