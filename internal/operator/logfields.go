package operator

import (
	"slices"

	"go.uber.org/zap/zapcore"
)

// deferredFields is a zap core that keeps the fields a logger is given
// (logr's WithValues) until it logs an entry, and encodes them then.
// controller-runtime gives every reconcile a logger with its controller,
// object and reconcile ID, and zap encodes such fields as they are added:
// each of the thousands of reconciles of a burst, which log nothing, paid
// for an encoder's copy and a buffer. zap's own WithLazy defers only until the next With, which
// controller-runtime makes at once.
//
// A field's value is read when the entry is written, not when it is added;
// every value the operator and controller-runtime add is immutable.
type deferredFields struct {
	// base is the core without the deferred fields.
	base   zapcore.Core
	fields []zapcore.Field
}

func withDeferredFields(core zapcore.Core) zapcore.Core {
	return deferredFields{base: core}
}

func (c deferredFields) Enabled(level zapcore.Level) bool { return c.base.Enabled(level) }

func (c deferredFields) With(fields []zapcore.Field) zapcore.Core {
	return deferredFields{base: c.base, fields: append(slices.Clip(c.fields), fields...)}
}

// Check lets the base core decide (its level, a sampler's counts) with the
// deferred fields added, only for an entry that its level lets through.
func (c deferredFields) Check(entry zapcore.Entry, checked *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.base.Enabled(entry.Level) {
		return checked
	}
	return c.withFields().Check(entry, checked)
}

func (c deferredFields) Write(entry zapcore.Entry, fields []zapcore.Field) error {
	return c.withFields().Write(entry, fields)
}

func (c deferredFields) Sync() error { return c.base.Sync() }

func (c deferredFields) withFields() zapcore.Core {
	if len(c.fields) == 0 {
		return c.base
	}
	return c.base.With(c.fields)
}
