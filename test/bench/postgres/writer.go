package postgres

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"example.com/platform-operator/internal/instance/postgres"
)

// writeEvery is the writer's pace, and attemptTimeout what it gives one
// attempt (a connection when it has none, and the insert): an attempt on a
// primary that stopped answering costs the writer up to that long before it
// tries the Service again, as it would cost an application.
const (
	writeEvery     = 50 * time.Millisecond
	attemptTimeout = time.Second
)

// commit is a row whose insert returned: when, and on which server (the
// address PostgreSQL saw the connection arrive on, which is its pod's).
type commit struct {
	id     int64
	at     time.Time
	server string
}

// writer inserts a row every writeEvery through CLUSTER-rw's loopback
// address, as an application would: on an error it drops its connection
// and connects again through the Service.
type writer struct {
	info postgres.ConnInfo

	mu      sync.Mutex
	commits []commit
	failed  int

	stop, done chan struct{}
}

func startWriter(info postgres.ConnInfo) *writer {
	w := &writer{info: info, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *writer) run() {
	defer close(w.done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	ticker := time.NewTicker(writeEvery)
	defer ticker.Stop()
	for id := int64(1); ; id++ {
		select {
		case <-w.stop:
			return
		case <-ticker.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), attemptTimeout)
		var err error
		if conn == nil {
			conn, err = postgres.Connect(ctx, w.info)
		}
		var server string
		if err == nil {
			err = conn.QueryRow(ctx, "INSERT INTO writes (id) VALUES ($1) RETURNING host(inet_server_addr())", id).Scan(&server)
		}
		at := time.Now()
		cancel()
		w.mu.Lock()
		if err != nil {
			w.failed++
		} else {
			w.commits = append(w.commits, commit{id: id, at: at, server: server})
		}
		w.mu.Unlock()
		if err != nil && conn != nil {
			conn.Close(context.Background())
			conn = nil
		}
	}
}

// firstAfter is the first commit after t on a server that match accepts.
func (w *writer) firstAfter(t time.Time, match func(server string) bool) (commit, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	from := sort.Search(len(w.commits), func(i int) bool { return w.commits[i].at.After(t) })
	for _, c := range w.commits[from:] {
		if match(c.server) {
			return c, true
		}
	}
	return commit{}, false
}

// longestPause is what a client that writes all along waits, at worst,
// for a commit across an action at from that ends with the commit at
// until: the longest time between two consecutive commits of commits (in
// time order) from the last one at or before from up to until.
func longestPause(commits []commit, from, until time.Time) time.Duration {
	i := sort.Search(len(commits), func(i int) bool { return commits[i].at.After(from) })
	if i > 0 {
		i--
	}
	var longest time.Duration
	for j := i + 1; j < len(commits) && !commits[j].at.After(until); j++ {
		longest = max(longest, commits[j].at.Sub(commits[j-1].at))
	}
	return longest
}

// pauseAround is longestPause over the writer's commits.
func (w *writer) pauseAround(from, until time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return longestPause(w.commits, from, until)
}

// lastCommit is the time of the latest commit, zero before the first.
func (w *writer) lastCommit() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.commits) == 0 {
		return time.Time{}
	}
	return w.commits[len(w.commits)-1].at
}

// halt stops the writer and returns the IDs of the rows whose insert
// returned, and the number of attempts that failed.
func (w *writer) halt() (ids []int64, failed int) {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	ids = make([]int64, len(w.commits))
	for i, c := range w.commits {
		ids[i] = c.id
	}
	return ids, w.failed
}

// missingRows counts the ids that the table lacks, read through
// CLUSTER-rw.
func missingRows(ctx context.Context, info postgres.ConnInfo, ids []int64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := postgres.Connect(ctx, info)
	if err != nil {
		return 0, fmt.Errorf("connect to count the rows: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT id FROM writes")
	if err != nil {
		return 0, err
	}
	present := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return 0, err
		}
		present[id] = true
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	missing := 0
	for _, id := range ids {
		if !present[id] {
			missing++
		}
	}
	return missing, nil
}
