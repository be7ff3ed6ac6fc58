package postgres

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
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
