package pgbench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"example.com/platform-operator/internal/instance/postgres"
)

// placementSettings say where a server lives and listens, or what it is
// called: they differ between any two servers on one machine.
var placementSettings = []string{"port", "listen_addresses", "unix_socket_directories", "data_directory", "config_file", "hba_file",
	"ident_file", "external_pid_file", "cluster_name", "primary_conninfo", "primary_slot_name"}

// showAll is SHOW ALL on a server, as the role of info sees it.
func showAll(ctx context.Context, info postgres.ConnInfo) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := postgres.Connect(ctx, info)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, "SHOW ALL")
	if err != nil {
		return nil, fmt.Errorf("SHOW ALL: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, setting, description string
		if err := rows.Scan(&name, &setting, &description); err != nil {
			return nil, fmt.Errorf("SHOW ALL: %w", err)
		}
		out[name] = setting
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("SHOW ALL: %w", err)
	}
	return out, nil
}

// diffSettings lists, sorted by name, the parameters whose values differ
// or that one side alone shows, the placement ones apart.
func diffSettings(ours, byHand map[string]string) SettingsDiff {
	var d SettingsDiff
	names := slices.Sorted(maps.Keys(ours))
	for name := range byHand {
		if _, ok := ours[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		o, okO := ours[name]
		b, okB := byHand[name]
		if okO && okB && o == b {
			continue
		}
		if !okO {
			o = "—"
		}
		if !okB {
			b = "—"
		}
		diff := SettingDiff{Name: name, Ours: o, ByHand: b}
		if slices.Contains(placementSettings, name) {
			d.Placement = append(d.Placement, diff)
		} else {
			d.Differ = append(d.Differ, diff)
		}
	}
	return d
}
