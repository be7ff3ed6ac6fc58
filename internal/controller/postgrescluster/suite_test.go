package postgrescluster_test

import (
	"os"
	"testing"

	"example.com/platform-operator/internal/controller/postgrescluster/postgresclustertest"
	"example.com/platform-operator/internal/envsuite"
)

// The envtest suite (package envsuite) runs a real kube-apiserver and etcd
// with the reconciler in a manager, its cache configured as in production
// (the pods trimmed by kit.TrimPod). Nothing schedules the pods and no
// instance manager runs: the tests write what a kubelet and the instance
// managers would, the pods' status and reports and the primary's Lease.
// Package internal/instance runs the controller with real instance
// managers and PostgreSQL.
var suite envsuite.Suite

func TestMain(m *testing.M) {
	os.Exit(envsuite.Run(m, &suite, postgresclustertest.SuiteOptions()))
}
