package objectstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// ownerObject records the cluster that archives into a location.
const ownerObject = "owner.json"

// Owner is the cluster that archives into a location: its UID tells it
// from another of the same name, and from a cluster restored from it.
type Owner struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Cluster   string `json:"cluster"`
}

// ClaimArchive makes sure owner may archive into the location: it is
// owner's already, or it holds no WAL and becomes owner's. Any other
// cluster's archive there is refused, so that two clusters never write one
// path and a restored cluster never archives onto its source's history.
func (c *Client) ClaimArchive(ctx context.Context, owner Owner) error {
	if owner.UID == "" {
		return errors.New("claim the archive: no owner UID")
	}
	data, err := c.getAll(ctx, ownerObject)
	switch {
	case err == nil:
		var found Owner
		if err := json.Unmarshal(data, &found); err != nil {
			return fmt.Errorf("read the owner of %s: %w", c.loc, err)
		}
		if found.UID != owner.UID {
			return fmt.Errorf("%s is the archive of PostgresCluster %s/%s (uid %s), not this cluster's: give this cluster a path of its own",
				c.loc, found.Namespace, found.Cluster, found.UID)
		}
		return nil
	case !errors.Is(err, ErrNotFound):
		return err
	}
	empty, err := c.ArchiveEmpty(ctx)
	if err != nil {
		return err
	}
	if !empty {
		return fmt.Errorf("%s holds WAL of a cluster that recorded no owner: give this cluster a path of its own", c.loc)
	}
	record, err := json.Marshal(owner)
	if err != nil {
		return fmt.Errorf("encode the owner: %w", err)
	}
	return c.put(ctx, ownerObject, record)
}
