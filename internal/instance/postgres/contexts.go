package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// describeTimeout bounds postgres --describe-config.
const describeTimeout = 30 * time.Second

// contextsByBinDir caches, per PostgreSQL binary directory, what
// postgres --describe-config says of each parameter's context: it depends
// only on the binary.
var contextsByBinDir sync.Map // string → map[string]string

// parameterContexts maps each parameter postgres knows to its context
// (postmaster, sighup, superuser, user...), as the installed binary
// describes them, so that the rule follows the PostgreSQL version.
func (i *Instance) parameterContexts() (map[string]string, error) {
	if c, ok := contextsByBinDir.Load(i.BinDir); ok {
		return c.(map[string]string), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()
	out, err := i.runTool(ctx, "postgres", nil, "--describe-config")
	if err != nil {
		return nil, fmt.Errorf("read the contexts of PostgreSQL's parameters: %w", err)
	}
	contexts := parseDescribeConfig(out)
	if len(contexts) == 0 {
		return nil, fmt.Errorf("read the contexts of PostgreSQL's parameters: postgres --describe-config described none")
	}
	contextsByBinDir.Store(i.BinDir, contexts)
	return contexts, nil
}

// parseDescribeConfig reads postgres --describe-config: one parameter per
// line, tab-separated, its name then its context.
func parseDescribeConfig(out string) map[string]string {
	contexts := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Split(line, "\t")
		if len(fields) >= 2 && fields[0] != "" {
			contexts[strings.ToLower(fields[0])] = fields[1]
		}
	}
	return contexts
}
