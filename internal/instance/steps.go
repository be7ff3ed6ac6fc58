package instance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
)

// defaultParameters are settings the instance manager gives PostgreSQL
// unless the cluster's spec sets them: a connection to a peer that is cut
// off ends within seconds, so that a standby notices a lost primary, and a
// primary its lost standbys, in time for the lease.
var defaultParameters = map[string]string{
	"wal_receiver_timeout": "5s",
	"wal_sender_timeout":   "5s",
}

// settingsOf are the operator's settings for this instance from the
// cluster's spec.
func (m *Manager) settingsOf(pg *v1alpha1.PostgresCluster) postgres.Settings {
	params := maps.Clone(pg.Spec.Parameters)
	if params == nil {
		params = map[string]string{}
	}
	for name, value := range defaultParameters {
		if !setsParameter(params, name) {
			params[name] = value
		}
	}
	if !setsParameter(params, "max_slot_wal_keep_size") {
		params["max_slot_wal_keep_size"] = maxSlotWALKeepSize(pg)
	}
	maps.Copy(params, sizedParameters(pg.Spec))
	s := postgres.Settings{SuperuserAccess: pg.Spec.SuperuserAccess, Parameters: params, StreamThroughSlot: true,
		Archive: m.archiveSettings(pg), Recovery: m.recoverySettings(pg), TLS: m.tls,
		RefuseTCPWithoutTLS: !m.opts.PlainTCPWithoutCertificate}
	var streaming []postgres.Standby
	if m.lastRead.state != nil {
		streaming = m.lastRead.state.Standbys
	}
	s.Synchronous = synchronousOf(int(pg.Spec.Synchronous), standbyNames(pg, m.opts.PodName), pg.Spec.DataDurability, streaming)
	return s
}

// synchronousOf is a primary's quorum of synchronous standbys: ANY n of
// standbys; with dataDurability preferred, of those of them that stream
// now, n at most, and none while none streams, so that commits wait only
// for standbys that can confirm them.
func synchronousOf(n int, standbys []string, durability v1alpha1.PostgresDataDurability, peers []postgres.Standby) postgres.Synchronous {
	if n <= 0 {
		return postgres.Synchronous{}
	}
	if durability == v1alpha1.DurabilityPreferred {
		var up []string
		for _, name := range standbys {
			if slices.ContainsFunc(peers, func(p postgres.Standby) bool { return p.ApplicationName == name && p.State == "streaming" }) {
				up = append(up, name)
			}
		}
		standbys, n = up, min(n, len(up))
		if n == 0 {
			return postgres.Synchronous{}
		}
	}
	return postgres.Synchronous{Number: n, Standbys: standbys}
}

// standbyNames are the instances that stream from primary when it is the
// primary: every other instance of 1..spec.instances, by the application
// name each gives its replication connection.
func standbyNames(pg *v1alpha1.PostgresCluster, primary string) []string {
	var names []string
	for i := 1; i <= int(pg.Spec.Instances); i++ {
		if name := fmt.Sprintf("%s-%d", pg.Name, i); name != primary {
			names = append(names, name)
		}
	}
	return names
}

// setsParameter tells whether params sets name. A parameter's name has no
// case: the user's, whatever its case, replaces the default.
func setsParameter(params map[string]string, name string) bool {
	for k := range params {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// applySettings writes the configuration again when the cluster's spec
// changed it, and reloads or restarts a running postgres as the change
// needs. Parameters the operator refuses (a name it owns: it reports it)
// or this PostgreSQL refuses (which it would not start with: do reports
// it) are not written: the instance keeps those it has, with the
// operator's own settings (its synchronous standbys among them), also
// when its manager restarted.
func (m *Manager) applySettings(pg *v1alpha1.PostgresCluster) {
	settings := m.settingsOf(pg)
	if m.pg.CheckParameters(settings.Parameters) != nil {
		kept, err := m.keptParameters()
		if err != nil {
			m.log.Error(err, "Configuration not written")
			return
		}
		settings.Parameters = kept
	}
	if m.settings != nil && equality.Semantic.DeepEqual(*m.settings, settings) {
		return
	}
	m.pg.Settings = settings
	if !m.pg.Initialized() {
		return
	}
	standby, err := m.pg.StandbyConfigured()
	if err != nil {
		m.log.Error(err, "Configuration not written")
		return
	}
	var change postgres.Change
	if standby {
		if m.following == "" {
			// The standby's primary is not known yet: written when it is
			// followed.
			return
		}
		change, err = m.configureStandby(context.Background(), pg, m.following)
	} else {
		change, err = m.pg.ConfigurePrimary()
	}
	if err != nil {
		m.log.Error(err, "Configuration not written")
		return
	}
	s := settings
	m.settings = &s
	m.applyChange(change)
}

// keptParameters are the parameters the instance has when it refuses the
// spec's: those it was last given, else those its operator.conf holds (a
// manager that restarted), else the defaults (a new instance).
func (m *Manager) keptParameters() (map[string]string, error) {
	if m.pg.Settings.Parameters != nil {
		return m.pg.Settings.Parameters, nil
	}
	written, err := m.pg.WrittenParameters()
	if err != nil {
		return nil, fmt.Errorf("read the parameters the instance has: %w", err)
	}
	if written != nil {
		return written, nil
	}
	return maps.Clone(defaultParameters), nil
}

// parametersRefused says which of the cluster's spec.parameters this
// PostgreSQL refuses, and why; nil when it takes them all, or when the
// operator refuses them itself (ValidateParameters) and reports it.
func (m *Manager) parametersRefused(pg *v1alpha1.PostgresCluster) error {
	if postgres.ValidateParameters(pg.Spec.Parameters) != nil {
		return nil
	}
	err := m.pg.CheckParameters(m.settingsOf(pg).Parameters)
	if err == nil {
		return nil
	}
	var refused *postgres.RefusedParametersError
	if !errors.As(err, &refused) {
		return fmt.Errorf("spec.parameters not applied, the instance keeps its configuration: %w", err)
	}
	parts := make([]string, len(refused.Refused))
	for i, r := range refused.Refused {
		parts[i] = fmt.Sprintf("spec.parameters.%s: %s", r.Name, r.Reason)
	}
	return fmt.Errorf("PostgreSQL refuses spec.parameters, the instance keeps its configuration: %s", strings.Join(parts, "; "))
}

// applyChange makes a running postgres take a configuration change.
func (m *Manager) applyChange(change postgres.Change) {
	if m.proc == nil {
		return
	}
	switch change {
	case postgres.ReloadNeeded:
		if err := m.proc.Reload(); err != nil {
			m.log.Error(err, "Reload failed")
		}
	case postgres.RestartNeeded:
		m.log.Info("Restarting PostgreSQL for a configuration change")
		m.stopFast(context.Background())
	}
}

func (m *Manager) configureStandby(ctx context.Context, pg *v1alpha1.PostgresCluster, primary string) (postgres.Change, error) {
	source, err := m.replicationSource(ctx, pg, primary)
	if err != nil {
		return postgres.NoChange, err
	}
	return m.pg.ConfigureStandby(withoutPassword(source))
}

// withoutPassword is source as a standby's primary_conninfo names it: the
// password stays in the passfile.
func withoutPassword(source postgres.ConnInfo) postgres.ConnInfo {
	source.Password = ""
	return source
}

// do takes one step. Once the instance runs in its role, the step's error
// is the refusal of spec.parameters, if any: the instance's report carries
// it to the cluster's status.
func (m *Manager) do(ctx context.Context, s step, pg *v1alpha1.PostgresCluster, v view) error {
	if err := m.doStep(ctx, s, pg, v); err != nil {
		return err
	}
	if s == stepRun && pg != nil {
		return m.parametersRefused(pg)
	}
	return nil
}

// doStep takes the step next chose.
func (m *Manager) doStep(ctx context.Context, s step, pg *v1alpha1.PostgresCluster, v view) error {
	switch s {
	case stepInitDB:
		return m.initDB(ctx, pg)
	case stepClone:
		source, err := m.replicationSource(ctx, pg, v.current)
		if err != nil {
			return err
		}
		if err := m.pg.CloneFrom(ctx, source); err != nil {
			return err
		}
		m.following = v.current
		return nil
	case stepFetch:
		return m.fetchBaseBackup(ctx, pg)
	case stepRecover:
		// The recovery settings stay until PostgreSQL promoted and
		// removed recovery.signal.
		if _, err := m.pg.ConfigurePrimary(); err != nil {
			return err
		}
		m.following = ""
		return m.start(ctx)
	case stepAcquireLease:
		if err := m.lease.acquire(ctx); err != nil {
			return err
		}
		m.markAPI()
		m.selfFenced.Store(false)
		return nil
	case stepStartPrimary, stepRestore:
		// A restored standby's data starts as a primary once its
		// standby.signal and primary_conninfo are gone: PostgreSQL replays
		// what the copy holds and opens.
		if _, err := m.pg.ConfigurePrimary(); err != nil {
			return err
		}
		m.following = ""
		return m.start(ctx)
	case stepStartStandby:
		switch {
		case v.election():
			// Started for the election to see where its WAL ends: it
			// takes none from the former primary meanwhile.
			if _, err := m.pg.DetachStandby(); err != nil {
				return err
			}
			m.following, m.detachedUnder = "", v.epoch
		case v.primaryReady && m.following != v.current:
			if _, err := m.configureStandby(ctx, pg, v.current); err != nil {
				return err
			}
			m.following = v.current
		case m.following == "":
			// No run of this manager configured the standby: the
			// configuration in the data directory is the former pod's
			// (the election's target, its pod deleted and back), whose
			// socket directory and TLS files may be gone. It starts
			// following nobody, as the target does.
			if _, err := m.pg.DetachStandby(); err != nil {
				return err
			}
		}
		return m.start(ctx)
	case stepDetach:
		change, err := m.pg.DetachStandby()
		if err != nil {
			return err
		}
		m.following, m.detachedUnder = "", v.epoch
		m.applyChange(change)
		return nil
	case stepPromote:
		if err := m.pg.Promote(ctx); err != nil {
			return err
		}
		m.following = ""
		change, err := m.pg.ConfigurePrimary()
		if err != nil {
			return err
		}
		if change == postgres.ReloadNeeded {
			m.applyChange(change)
		}
		m.log.Info("Promoted")
		return nil
	case stepStepDown:
		m.stopFast(ctx)
		if cd, err := m.pg.ControlData(ctx); err == nil && cd.CleanShutdown() {
			m.handedOver = cd.CheckpointLSN
		}
		return m.releaseLease(ctx)
	case stepReleaseLease:
		return m.releaseLease(ctx)
	case stepFence:
		m.stopFast(ctx)
		return nil
	case stepRewind:
		m.stopFast(ctx)
		source, err := m.replicationSource(ctx, pg, v.current)
		if err != nil {
			return err
		}
		if err := m.pg.Rewind(ctx, source); err != nil {
			return err
		}
		if _, err := m.pg.ConfigureStandby(withoutPassword(source)); err != nil {
			return err
		}
		m.following, m.handedOver = v.current, 0
		m.selfFenced.Store(false)
		m.notStreamingSince = time.Time{}
		return m.start(ctx)
	case stepFollow:
		change, err := m.configureStandby(ctx, pg, v.current)
		if err != nil {
			return err
		}
		m.following, m.detachedUnder = v.current, 0
		m.applyChange(change)
		return nil
	}
	return nil
}

func (m *Manager) releaseLease(ctx context.Context) error {
	if err := m.lease.release(ctx); err != nil {
		return err
	}
	m.markAPI()
	return nil
}

// start runs postgres; its readiness shows in the next ticks.
func (m *Manager) start(ctx context.Context) error {
	if m.proc != nil {
		return nil
	}
	// The process outlives this tick: it ends with the manager.
	proc, err := m.pg.Start(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	m.proc = proc
	m.pid.Store(int64(proc.PID()))
	m.selfFenced.Store(false)
	return nil
}

// initDB makes the cluster's database with the passwords of its Secrets.
func (m *Manager) initDB(ctx context.Context, pg *v1alpha1.PostgresCluster) error {
	super, err := m.secrets.read(ctx, pgspec.SuperuserSecret(pg.Name))
	if err != nil {
		return err
	}
	repl, err := m.secrets.read(ctx, pgspec.ReplicationSecret(pg.Name))
	if err != nil {
		return err
	}
	app, err := m.secrets.read(ctx, appSecretOf(pg))
	if err != nil {
		return err
	}
	role, database := owner(pg)
	if app.user != "" && app.user != role {
		return errors.New("the application Secret's username is not the owner of spec.bootstrap.initdb")
	}
	if err := m.pg.InitDB(ctx, postgres.InitOptions{
		SuperuserPassword: super.password, ReplicationPassword: repl.password,
		Database: database, Owner: role, OwnerPassword: app.password,
	}); err != nil {
		return err
	}
	m.applied[appRoleKey], m.applied[postgres.SuperUser], m.applied[postgres.ReplicationUser] = app.version, super.version, repl.version
	_, err = m.pg.ConfigurePrimary()
	return err
}
