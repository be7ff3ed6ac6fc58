// Package objectstore is the one S3 client of PostgresCluster backups:
// the instance manager archives and restores WAL with it, base backups
// are written and read with it, and its layout (where a cluster's WAL and
// base backups live under the store's path) is defined here only. It has
// no Kubernetes code: the store's location and keys reach it as a
// Location, which the operator's pod gives the instance manager.
//
// Layout under Location.Prefix (docs/postgrescluster.md draws it):
//
//	wals/TTTTTTTTXXXXXXXX/SEGMENT[.gz]   WAL segments by timeline and log
//	wals/NAME[.gz]                       timeline history and other files
//	base/ID/backup.json                  a base backup's record, written last
//	base/ID/data.tar[.gz]                its data directory as a tar
package objectstore
