package pgspec

// The layout of a PostgreSQL pod, the instance's and a tool Job's: the
// operator writes it, the instance manager and the tools read it from
// their environment, and the local cluster maps it onto the host.
const (
	// Port is where every instance's PostgreSQL listens, and the port of
	// the cluster's Services.
	Port = 5432
	// StatusPort serves the instance manager's /healthz and /readyz.
	StatusPort = 8000
	// MetricsPort serves the instance manager's /metrics (HTTPS), the
	// port postgres_exporter made customary.
	MetricsPort = 9187
	// UID is the postgres user of the official PostgreSQL images.
	UID int64 = 999

	// BinDir holds PostgreSQL's programs in the official images.
	BinDir    = "/usr/lib/postgresql/15/bin"
	DataDir   = "/var/lib/postgresql/data"
	PGData    = DataDir + "/pgdata"
	SocketDir = "/run/postgresql"

	// ToolsDir is where the init container copies the operator's binary
	// into a pod of the PostgreSQL image, and ManagerPath the copy: the
	// image has PostgreSQL, the binary the instance manager and tools.
	ToolsDir    = "/controller"
	ManagerPath = ToolsDir + "/manager"
	// OperatorBinary is the binary in the operator's image.
	OperatorBinary = "/platform-operator"

	// ContainerName is the instance's container; InstallContainer the
	// init container that copies the binary; ToolsVolume the volume it
	// copies into.
	ContainerName    = "postgres"
	InstallContainer = "bootstrap"
	ToolsVolume      = "controller"

	// BackupDir is where a base backup Job mounts its run's claim, and
	// BaseBackupDir the data directory it makes there, which a cluster
	// restored from the claim starts from.
	BackupDir     = "/backup"
	BaseBackupDir = BackupDir + "/pgdata"
	// TerminationLog is where a tool writes its result.
	TerminationLog = "/dev/termination-log"
)

// Environment of the instance manager, set by the operator's pod.
const (
	EnvPodName       = "POD_NAME"
	EnvPodNamespace  = "POD_NAMESPACE"
	EnvNodeName      = "NODE_NAME"
	EnvClusterName   = "CLUSTER_NAME"
	EnvClusterDomain = "CLUSTER_DOMAIN"
	EnvPGData        = "PGDATA"
	EnvPGBinDir      = "PG_BIN_DIR"
	EnvSocketDir     = "PG_SOCKET_DIR"
	// EnvListenAddress overrides where PostgreSQL listens: the local
	// cluster's simulation sets it, the operator's pod does not.
	EnvListenAddress = "PG_LISTEN_ADDRESS"
)

// Environment of the tools (base backup, verify query): libpq's own names,
// so that the PostgreSQL programs they run read them too.
const (
	// EnvPassword is the password of the role a tool connects as.
	EnvPassword = "PGPASSWORD"
	// EnvUser and EnvDatabase are the restored cluster's owner and
	// database, as which a restore drill's query runs.
	EnvUser     = "PGUSER"
	EnvDatabase = "PGDATABASE"
	// EnvVerifySQL is a restore drill's query.
	EnvVerifySQL = "VERIFY_SQL"
	// EnvCACert is the cluster's CA certificate (PEM, not a path: the
	// local cluster resolves a Secret's key into a variable, not into a
	// file), which a tool verifies the server with (sslmode=verify-full).
	EnvCACert = "PG_CA_CERT"
)
