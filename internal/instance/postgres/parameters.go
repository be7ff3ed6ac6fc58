package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ownedNames are the parameters the operator sets itself (operator.conf) or
// that would let a user's parameter move files, listeners or the recovery
// the operator drives. include* are directives, not parameters, but
// postgresql.conf accepts "include = 'file'": refusing them keeps a user's
// parameter from pulling in another file.
var ownedNames = []string{
	"config_file",
	"data_directory",
	"hba_file",
	"hot_standby",
	"ident_file",
	"include",
	"include_dir",
	"include_if_exists",
	"listen_addresses",
	"log_destination",
	"logging_collector",
	"max_wal_senders",
	"password_encryption",
	"port",
	"promote_trigger_file",
	"restore_command",
	"synchronous_standby_names",
	"wal_keep_size",
	"wal_level",
	"wal_log_hints",
}

// ownedPrefixes are families of parameters the operator owns: archiving and
// recovery (the operator's backups and failovers), the sockets, the
// connection to the primary, and TLS (certificates the operator will
// manage).
var ownedPrefixes = []string{"archive_", "primary_", "recovery_", "ssl", "unix_socket_"}

// parameterName is the syntax of a parameter name, with an optional
// extension prefix (pg_stat_statements.max): anything else could break the
// line it is written on.
var parameterName = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*$`)

// OwnedParameters lists the parameters a user cannot set, for documentation
// and error messages: names, and families written as a prefix followed by
// "*".
func OwnedParameters() []string {
	out := slices.Clone(ownedNames)
	for _, p := range ownedPrefixes {
		out = append(out, p+"*")
	}
	slices.Sort(out)
	return out
}

// IsOwnedParameter tells whether the operator owns the parameter name
// (compared without case, as PostgreSQL does).
func IsOwnedParameter(name string) bool {
	name = strings.ToLower(name)
	if slices.Contains(ownedNames, name) {
		return true
	}
	for _, p := range ownedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// InvalidParametersError says which of a user's parameters were refused and
// why, each list sorted, so that the message is the same on every
// reconcile.
type InvalidParametersError struct {
	// Owned are the parameters the operator owns.
	Owned []string
	// InvalidNames are names that are not parameter names, or that repeat
	// another one but for case.
	InvalidNames []string
	// InvalidValues are parameters whose value has a newline or a NUL
	// character, which postgresql.conf cannot hold.
	InvalidValues []string
}

func (e *InvalidParametersError) Error() string {
	var parts []string
	if len(e.Owned) > 0 {
		parts = append(parts, "parameters owned by the operator: "+strings.Join(e.Owned, ", "))
	}
	if len(e.InvalidNames) > 0 {
		parts = append(parts, "invalid parameter names: "+strings.Join(e.InvalidNames, ", "))
	}
	if len(e.InvalidValues) > 0 {
		parts = append(parts, "values with a newline or a NUL character: "+strings.Join(e.InvalidValues, ", "))
	}
	return "refused PostgreSQL parameters: " + strings.Join(parts, "; ")
}

// ValidateParameters checks a user's parameters: none may be owned by the
// operator, each name must be a parameter name (and appear once, whatever
// its case), each value must fit on one line. The error is an
// *InvalidParametersError naming every refused key.
func ValidateParameters(params map[string]string) error {
	e := &InvalidParametersError{}
	seen := map[string]string{}
	for name, value := range params {
		lower := strings.ToLower(name)
		switch {
		case !parameterName.MatchString(lower):
			e.InvalidNames = append(e.InvalidNames, fmt.Sprintf("%q", name))
		case IsOwnedParameter(lower):
			e.Owned = append(e.Owned, name)
		case seen[lower] != "":
			e.InvalidNames = append(e.InvalidNames, name, seen[lower])
		}
		seen[lower] = name
		if strings.ContainsAny(value, "\x00\n\r") {
			e.InvalidValues = append(e.InvalidValues, name)
		}
	}
	if len(e.Owned)+len(e.InvalidNames)+len(e.InvalidValues) == 0 {
		return nil
	}
	slices.Sort(e.Owned)
	slices.Sort(e.InvalidNames)
	e.InvalidNames = slices.Compact(e.InvalidNames)
	slices.Sort(e.InvalidValues)
	return e
}

// quoteConfValue quotes a value for postgresql.conf: in single quotes, with
// single quotes doubled and backslashes doubled (the file's parser reads
// backslash escapes inside quotes). Callers refuse newlines first.
func quoteConfValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(v) + "'"
}

// RefusedParameter is one of a user's parameters that PostgreSQL refuses,
// and why, in PostgreSQL's words.
type RefusedParameter struct {
	// Name is the parameter's name as the user wrote it.
	Name string
	// Reason is what PostgreSQL said of it.
	Reason string
}

// RefusedParametersError says which of a user's parameters this
// PostgreSQL refuses, sorted by name: a name it does not know, or a value
// of the wrong type, out of range or not among the choices. PostgreSQL
// would not start with them.
type RefusedParametersError struct {
	Refused []RefusedParameter
}

func (e *RefusedParametersError) Error() string {
	parts := make([]string, len(e.Refused))
	for i, r := range e.Refused {
		parts[i] = r.Name + ": " + r.Reason
	}
	return "PostgreSQL refuses parameters: " + strings.Join(parts, "; ")
}

// checkTimeout bounds one check of a parameter set.
const checkTimeout = 30 * time.Second

// checkedLimit bounds how many parameter sets checkedParameters remembers.
const checkedLimit = 64

// checkedParameters remembers, per PostgreSQL binary directory and
// parameter set (as rendered), what CheckParameters found: nil or a
// *RefusedParametersError. It depends only on the binary, and the instance
// manager asks again on every tick.
var checkedParameters = struct {
	sync.Mutex
	m map[string]error
}{m: map[string]error{}}

// CheckParameters checks a user's parameters (Settings.Parameters) with
// this PostgreSQL's own parser, as it reads postgresql.conf when it
// starts, without touching the data directory: postgres -C reads them from
// a scratch directory next to it. PostgreSQL refuses a name it does not
// know, except one with a dot (an extension's, or a custom parameter), and
// a value of the wrong type, out of range, or not among an enum's choices.
// It loads no library: shared_preload_libraries naming a missing one
// passes. The error is the *InvalidParametersError of ValidateParameters,
// a *RefusedParametersError naming each refused parameter, or any other
// error when the check could not run. Results are remembered per binary.
func (i *Instance) CheckParameters(params map[string]string) error {
	if err := ValidateParameters(params); err != nil {
		return err
	}
	if len(params) == 0 {
		return nil
	}
	key := i.BinDir + "\x00" + renderParameters(params)
	checkedParameters.Lock()
	err, ok := checkedParameters.m[key]
	checkedParameters.Unlock()
	if ok {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	err = i.checkParameters(ctx, params)
	var refused *RefusedParametersError
	if err != nil && !errors.As(err, &refused) {
		return fmt.Errorf("check the parameters with PostgreSQL: %w", err)
	}
	checkedParameters.Lock()
	defer checkedParameters.Unlock()
	if len(checkedParameters.m) >= checkedLimit {
		clear(checkedParameters.m)
	}
	checkedParameters.m[key] = err
	return err
}

// checkParameters has postgres parse params, all together, then, when it
// refuses them, each alone to tell which it refuses and why.
func (i *Instance) checkParameters(ctx context.Context, params map[string]string) error {
	dir, err := os.MkdirTemp(filepath.Dir(i.DataDir), "."+filepath.Base(i.DataDir)+".parameters-*")
	if err != nil {
		return fmt.Errorf("make a scratch directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := i.chown(dir); err != nil {
		return err
	}
	all, err := i.parseParameters(ctx, dir, params)
	if err != nil || all == "" {
		return err
	}
	e := &RefusedParametersError{}
	for _, name := range slices.Sorted(maps.Keys(params)) {
		reason, err := i.parseParameters(ctx, dir, map[string]string{name: params[name]})
		if err != nil {
			return err
		}
		if reason != "" {
			e.Refused = append(e.Refused, RefusedParameter{Name: name, Reason: reason})
		}
	}
	if len(e.Refused) == 0 {
		// Each passes alone: PostgreSQL refuses them together.
		for _, name := range slices.Sorted(maps.Keys(params)) {
			e.Refused = append(e.Refused, RefusedParameter{Name: name, Reason: "refused with the others: " + all})
		}
	}
	return e
}

// parseParameters writes params as the postgresql.conf of the scratch
// directory dir and has postgres parse it (postgres -C, which exits once
// it read the configuration: no server starts). It returns why postgres
// refuses them, or "" when it takes them.
func (i *Instance) parseParameters(ctx context.Context, dir string, params map[string]string) (string, error) {
	conf := filepath.Join(dir, mainConfFile)
	if err := i.writeFile(conf, []byte(renderParameters(params)), 0o600); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, i.bin("postgres"), "-D", dir, "-C", "port")
	cmd.Env = i.childEnv()
	cmd.Dir = "/"
	cmd.SysProcAttr = i.sysProcAttr(syscall.SIGKILL)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = toolWaitDelay
	stderr := &tailBuffer{limit: outputLimit}
	cmd.Stderr = stderr
	err := cmd.Run()
	if err == nil {
		return "", nil
	}
	var exit *exec.ExitError
	said := stderr.String()
	if ctx.Err() != nil || !errors.As(err, &exit) || !strings.Contains(said, "contains errors") {
		return "", fmt.Errorf("postgres -C: %w%s", err, outputSuffix(said))
	}
	if reason := refusalReason(said); reason != "" {
		return reason, nil
	}
	return strings.TrimSpace(said), nil
}

// serverMessage is a message of postgres's log, its prefix aside.
var serverMessage = regexp.MustCompile(`(LOG|WARNING|ERROR|DETAIL|HINT):  (.*)$`)

// inFile is where PostgreSQL says a configuration line is: the scratch
// file, meaningless to the user.
var inFile = regexp.MustCompile(` in file ".*" line [0-9]+$`)

// refusalReason keeps of what postgres said when it refused a
// configuration file the messages about its lines, a hint or detail in
// parentheses after its message: not that a file is missing, nor the
// final "contains errors".
func refusalReason(said string) string {
	var msgs []string
	for _, line := range strings.Split(said, "\n") {
		m := serverMessage.FindStringSubmatch(strings.TrimSpace(line))
		switch {
		case m == nil || strings.HasPrefix(m[2], "skipping missing configuration file"):
		case (m[1] == "HINT" || m[1] == "DETAIL") && len(msgs) > 0:
			msgs[len(msgs)-1] += " (" + m[2] + ")"
		default:
			msgs = append(msgs, inFile.ReplaceAllString(m[2], ""))
		}
	}
	return strings.Join(msgs, "; ")
}

// renderParameters renders a user's parameters as postgresql.conf lines,
// sorted, the names in lower case, every value quoted.
func renderParameters(params map[string]string) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(params)) {
		fmt.Fprintf(&b, "%s = %s\n", strings.ToLower(name), quoteConfValue(params[name]))
	}
	return b.String()
}

// unquoteConfValue undoes quoteConfValue.
func unquoteConfValue(q string) (string, error) {
	if len(q) < 2 || q[0] != '\'' || q[len(q)-1] != '\'' {
		return "", fmt.Errorf("value %s is not quoted", q)
	}
	var b strings.Builder
	s := q[1 : len(q)-1]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' || c == '\'' {
			if i+1 >= len(s) || s[i+1] != c {
				return "", fmt.Errorf("value %s has a lone %c", q, c)
			}
			i++
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}
