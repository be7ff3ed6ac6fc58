package objectstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// holdDir holds the restores' holds on base backups.
const holdDir = "holds/"

// Hold is a restore's claim on a base backup of the archive: retention
// keeps that backup, and the WAL after it, until Until, however far behind
// the recovery window it falls. A restore takes one before it fetches the
// backup and lets it go once its recovery has ended; one that never does
// (its cluster deleted mid-restore) lapses at Until.
type Hold struct {
	// Key names the hold: the restoring cluster's UID, one per restore.
	Key string `json:"-"`
	// Backup is the ID of the base backup held.
	Backup string `json:"backup"`
	// Holder names the restoring cluster, NAMESPACE/NAME, for whoever
	// reads the store.
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

// holdKey matches a hold's key: it names an object.
var holdKey = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9]{0,62}$`)

func holdObject(key string) (string, error) {
	if !holdKey.MatchString(key) {
		return "", fmt.Errorf("%q cannot name a hold", key)
	}
	return holdDir + key + ".json", nil
}

// PutHold takes (or renews) hold h.
func (c *Client) PutHold(ctx context.Context, h Hold) error {
	name, err := holdObject(h.Key)
	if err != nil {
		return err
	}
	data, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("encode hold %s: %w", h.Key, err)
	}
	return c.put(ctx, name, data)
}

// DeleteHold lets hold key go; one that is gone is no error.
func (c *Client) DeleteHold(ctx context.Context, key string) error {
	name, err := holdObject(key)
	if err != nil {
		return err
	}
	return c.remove(ctx, []string{name})
}

// ListHolds reads every hold of the archive. An object under holds/ that
// is not one (unreadable, or another name) holds nothing and is left
// alone.
func (c *Client) ListHolds(ctx context.Context) ([]Hold, error) {
	objects, err := c.list(ctx, holdDir, 0)
	if err != nil {
		return nil, err
	}
	var holds []Hold
	for _, o := range objects {
		key := strings.TrimSuffix(strings.TrimPrefix(o.Name, holdDir), ".json")
		if !holdKey.MatchString(key) || o.Name != holdDir+key+".json" {
			continue
		}
		data, err := c.getAll(ctx, o.Name)
		if errors.Is(err, ErrNotFound) {
			continue // let go since the listing
		}
		if err != nil {
			return nil, err
		}
		var h Hold
		if json.Unmarshal(data, &h) != nil {
			continue
		}
		h.Key = key
		holds = append(holds, h)
	}
	return holds, nil
}
