package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/instance/postgres/postgrestest"
)

// TestDetachedStandbyReportsTheTimelineItReplayed: a standby that followed
// a promotion by streaming (no restart, so its control file still names the
// former timeline until its next restartpoint) and then detached reports
// the timeline it replays, not the one of its last restartpoint: an
// election ranks standbys by timeline first.
func TestDetachedStandbyReportsTheTimelineItReplayed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := newPair(ctx, t, postgres.Synchronous{})
	a, b := p.a, p.b
	c := postgrestest.NewInstance(t, "pg-c")
	cPass := postgrestest.PassFile(t, c,
		postgrestest.TCP(a, postgres.ReplicationUser, p.replPassword, ""),
		postgrestest.TCP(b, postgres.ReplicationUser, p.replPassword, ""))
	aProc := postgrestest.Start(ctx, t, a)
	execOn(ctx, t, a, "CREATE TABLE rows (id int PRIMARY KEY, timeline int)")
	for _, s := range []struct {
		inst *postgres.Instance
		pass string
	}{{b, p.bPass}, {c, cPass}} {
		if err := s.inst.CloneFrom(ctx, source(a, s.pass)); err != nil {
			t.Fatal(err)
		}
	}
	postgrestest.Start(ctx, t, b)
	cProc := postgrestest.Start(ctx, t, c)
	waitStreaming(ctx, t, a, "pg-c", "async")

	waitStreaming(ctx, t, a, "pg-b", "async")
	// Stopped cleanly first, so that both standbys hold all its WAL and
	// pg-c can follow pg-b's new timeline without a rewind.
	if err := aProc.Stop(ctx, postgres.StopFast); err != nil {
		t.Fatal(err)
	}
	if err := b.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConfigureStandby(source(b, cPass)); err != nil {
		t.Fatal(err)
	}
	if err := cProc.Reload(); err != nil {
		t.Fatal(err)
	}
	waitStreaming(ctx, t, b, "pg-c", "async")
	execOn(ctx, t, b, "INSERT INTO rows VALUES (2, 2)")
	waitRow(ctx, t, c, 2)

	if _, err := c.DetachStandby(); err != nil {
		t.Fatal(err)
	}
	if err := cProc.Reload(); err != nil {
		t.Fatal(err)
	}
	postgrestest.Eventually(t, replicationWait, "pg-c detached", func() error {
		s, err := b.State(ctx)
		if err != nil {
			return err
		}
		if len(s.Standbys) > 0 {
			return fmt.Errorf("standbys of pg-b: %+v", s.Standbys)
		}
		return nil
	})
	s, err := c.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.TimelineID != 2 {
		t.Errorf("the detached standby reports timeline %d, want 2, which it replays", s.TimelineID)
	}
}
