package postgres

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Change says what a running postgres needs to apply a new configuration.
type Change int

const (
	// NoChange: the files were already as wanted.
	NoChange Change = iota
	// ReloadNeeded: every change takes effect on a reload (Process.Reload).
	ReloadNeeded
	// RestartNeeded: a change takes effect only when postgres starts (a
	// postmaster-context parameter, or standby.signal appearing or going).
	RestartNeeded
)

func (c Change) String() string {
	switch c {
	case NoChange:
		return "none"
	case ReloadNeeded:
		return "reload"
	case RestartNeeded:
		return "restart"
	default:
		return fmt.Sprintf("Change(%d)", int(c))
	}
}

// ConfigurePrimary writes the configuration of a primary: operator.conf
// from Settings without primary_conninfo, pg_hba.conf, and no
// standby.signal. Call it again whenever Settings change. It writes
// nothing when Settings.Parameters differ from those written and
// CheckParameters refuses them, and returns its error. On a running
// standby, the RestartNeeded it reports means a restart that ends recovery
// on a new timeline: promote with Promote instead.
func (i *Instance) ConfigurePrimary() (Change, error) {
	if err := i.validate(); err != nil {
		return NoChange, err
	}
	change, err := i.configure(i.DataDir, nil)
	if err != nil {
		return NoChange, fmt.Errorf("configure %s as a primary: %w", i.Name, err)
	}
	i.Log.V(1).Info("Configured as a primary", "change", change.String())
	return change, nil
}

// ConfigureStandby writes the configuration of a standby of primary:
// operator.conf with primary_conninfo (its application_name set to the
// instance's name, which synchronous_standby_names lists), pg_hba.conf,
// and standby.signal. primary must carry a PassFile, not a Password. In
// PostgreSQL 15 primary_conninfo is reloadable: following a new primary
// needs only a reload; a running primary becoming a standby needs a
// restart (and usually a Rewind before it). Like ConfigurePrimary, it
// writes nothing when CheckParameters refuses new Settings.Parameters.
func (i *Instance) ConfigureStandby(primary ConnInfo) (Change, error) {
	if err := i.validate(); err != nil {
		return NoChange, err
	}
	change, err := i.configure(i.DataDir, &primary)
	if err != nil {
		return NoChange, fmt.Errorf("configure %s as a standby of %s: %w", i.Name, primary, err)
	}
	i.Log.V(1).Info("Configured as a standby", "primary", primary.String(), "change", change.String())
	return change, nil
}

// DetachStandby writes the configuration of a standby that follows no
// primary: standby.signal, and operator.conf without primary_conninfo.
// Reloaded, a running standby's WAL receiver stops and does not start
// again: it receives and confirms nothing more, and keeps replaying what
// it has, until ConfigureStandby names a primary again.
func (i *Instance) DetachStandby() (Change, error) {
	if err := i.validate(); err != nil {
		return NoChange, err
	}
	change, err := i.configureRole(i.DataDir, true, nil)
	if err != nil {
		return NoChange, fmt.Errorf("detach the standby %s from its primary: %w", i.Name, err)
	}
	i.Log.V(1).Info("Detached from its primary", "change", change.String())
	return change, nil
}

// configure writes the owned files of dataDir for the given role (nil
// primary: a primary) and says what applying them needs.
func (i *Instance) configure(dataDir string, primary *ConnInfo) (Change, error) {
	return i.configureRole(dataDir, primary != nil, primary)
}

// configureRole writes the owned files of dataDir for a primary, or for a
// standby of primary (of none, when primary is nil), and says what
// applying them needs.
func (i *Instance) configureRole(dataDir string, standby bool, primary *ConnInfo) (Change, error) {
	cfg := Config{ListenAddresses: i.ListenAddress, Port: i.Port, SocketDir: i.SocketDir, Settings: i.Settings}
	if primary != nil {
		p := *primary
		p.ApplicationName = i.Name
		cfg.Primary = &p
	}
	conf, err := RenderConfig(cfg)
	if err != nil {
		return NoChange, err
	}
	hba := RenderHBA(i.Settings.SuperuserAccess, i.Settings.hbaNetwork())

	confPath := filepath.Join(dataDir, ownedConfFile)
	hbaPath := filepath.Join(dataDir, hbaFile)
	signalPath := filepath.Join(dataDir, standbySignal)
	oldConf, err := readOptional(confPath)
	if err != nil {
		return NoChange, err
	}
	if userParameters(oldConf) != userParameters(conf) {
		// Parameters postgres refuses would stop it from starting again:
		// the files stay as they are.
		if err := i.CheckParameters(cfg.Parameters); err != nil {
			return NoChange, err
		}
	}
	oldHBA, err := readOptional(hbaPath)
	if err != nil {
		return NoChange, err
	}
	wasStandby, err := exists(signalPath)
	if err != nil {
		return NoChange, err
	}
	included, err := i.ensureIncluded(dataDir)
	if err != nil {
		return NoChange, err
	}

	if oldConf != conf {
		if err := i.writeFile(confPath, []byte(conf), 0o600); err != nil {
			return NoChange, err
		}
	}
	if oldHBA != hba {
		if err := i.writeFile(hbaPath, []byte(hba), 0o600); err != nil {
			return NoChange, err
		}
	}
	switch {
	case standby && !wasStandby:
		// An empty standby.signal: the settings live in operator.conf.
		if err := i.writeFile(signalPath, nil, 0o600); err != nil {
			return NoChange, err
		}
	case !standby && wasStandby:
		if err := os.Remove(signalPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return NoChange, fmt.Errorf("remove %s: %w", signalPath, err)
		}
	}

	if included || wasStandby != standby {
		return RestartNeeded, nil
	}
	changed := changedParameters(parseOwnedConf(oldConf), parseOwnedConf(conf))
	if len(changed) > 0 {
		contexts, err := i.parameterContexts()
		if err != nil {
			return NoChange, err
		}
		return changeFor(changed, contexts), nil
	}
	if oldHBA != hba {
		return ReloadNeeded, nil
	}
	return NoChange, nil
}

// WrittenParameters are the user's parameters that operator.conf holds,
// names in lower case: those PostgreSQL runs with, or will at its next
// start; nil when there is no operator.conf.
func (i *Instance) WrittenParameters() (map[string]string, error) {
	path := filepath.Join(i.DataDir, ownedConfFile)
	conf, err := readOptional(path)
	if err != nil || conf == "" {
		return nil, err
	}
	out := map[string]string{}
	for name, quoted := range parseOwnedConf(userParameters(conf)) {
		v, err := unquoteConfValue(quoted)
		if err != nil {
			return nil, fmt.Errorf("read %s: parameter %s: %w", path, name, err)
		}
		out[name] = v
	}
	return out, nil
}

// ensureIncluded appends the include of operator.conf to postgresql.conf
// when it is missing (after initdb), last so that its settings win, and
// tells whether it did. initdb's own postgresql.conf is otherwise kept: it
// holds what initdb chose for this host (shared memory, time zone).
func (i *Instance) ensureIncluded(dataDir string) (bool, error) {
	path := filepath.Join(dataDir, mainConfFile)
	content, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", path, err)
	}
	for _, line := range strings.Split(string(content), "\n") {
		if strings.TrimSpace(line) == includeOwnedCfg {
			return false, nil
		}
	}
	if len(content) > 0 && !bytes.HasSuffix(content, []byte("\n")) {
		content = append(content, '\n')
	}
	content = append(content, "\n# Settings owned by the PostgreSQL instance manager; keep this line last.\n"+includeOwnedCfg+"\n"...)
	if err := i.writeFile(path, content, 0o600); err != nil {
		return false, err
	}
	return true, nil
}

// parseOwnedConf reads back what RenderConfig wrote: one "name = value"
// per line, comments aside. Values stay quoted: they are only compared.
func parseOwnedConf(conf string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(conf, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, " = ")
		if ok {
			out[name] = value
		}
	}
	return out
}

// changedParameters lists the parameters set, changed or unset between two
// versions of operator.conf.
func changedParameters(before, after map[string]string) []string {
	var changed []string
	for name, v := range after {
		if old, ok := before[name]; !ok || old != v {
			changed = append(changed, name)
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			changed = append(changed, name)
		}
	}
	return changed
}

// changeFor says what applying changes to these parameters needs, from
// their contexts (postgres --describe-config): a postmaster-context
// parameter needs a restart, and so does one postgres does not describe
// (an extension's, whose library may define it as such); any other takes
// effect on a reload.
func changeFor(changed []string, contexts map[string]string) Change {
	change := NoChange
	for _, name := range changed {
		if strings.HasPrefix(name, "recovery_target_") && name != "recovery_target_timeline" {
			// Read only when PostgreSQL starts in archive recovery: once a
			// recovery promoted, taking them away needs no restart.
			change = max(change, ReloadNeeded)
			continue
		}
		switch contexts[name] {
		case "postmaster", "internal", "":
			return RestartNeeded
		default:
			change = ReloadNeeded
		}
	}
	return change
}

func readOptional(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(b), nil
}
