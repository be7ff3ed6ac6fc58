// Command etcd is etcd's own server entry point, built from the version that
// k8s.io/kubernetes pins so that the local control plane runs the etcd it was
// tested with.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
