package backupjob

import (
	"fmt"
	"strings"
	"time"

	// The operator's image has no zoneinfo: carry the time zone database in
	// the binary, so that spec.timeZone works everywhere (about 450 KB).
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	schedulePath = field.NewPath("spec", "schedule")
	timeZonePath = field.NewPath("spec", "timeZone")
)

// Schedule is a BackupJob's spec.schedule read in its spec.timeZone. The
// cron library serves only as a parser and to step through matching times;
// its in-memory runner is never used, since the schedule's state lives in
// the BackupJob's status.
type Schedule struct {
	// cron finds the times that match, as the built-in CronJob does.
	cron cron.Schedule
	// loc is spec.timeZone.
	loc *time.Location
	// wall is the same schedule read on a clock without daylight saving
	// time (UTC), to find which wall-clock times a daylight saving change
	// skips. It is nil for schedules that follow elapsed time: @every, and
	// schedules that match every hour. See schedule_dst.go.
	wall *cron.SpecSchedule
}

// ParseSchedule parses spec.schedule (five cron fields or a descriptor
// such as @daily or @every 10s) in spec.timeZone (an IANA name; empty means
// UTC). Its error names the field at fault, as the API server's errors do,
// for the InvalidSchedule and UnknownTimeZone conditions.
func ParseSchedule(schedule, timeZone string) (*Schedule, error) {
	loc, err := loadLocation(timeZone)
	if err != nil {
		return nil, err
	}
	// Cron's own TZ= prefix would override spec.timeZone; the CRD refuses
	// it too.
	if strings.HasPrefix(schedule, "TZ=") || strings.HasPrefix(schedule, "CRON_TZ=") {
		return nil, field.Invalid(schedulePath, schedule, "set the time zone in spec.timeZone, not in spec.schedule")
	}
	parsed, err := parseCron(schedule)
	if err != nil {
		return nil, field.Invalid(schedulePath, schedule, err.Error())
	}
	s := &Schedule{cron: parsed, loc: loc}
	switch p := parsed.(type) {
	case cron.ConstantDelaySchedule:
		// The cron library rounds @every to whole seconds, at least one;
		// refuse instead of running at another interval than asked.
		if d, perr := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(schedule, "@every"))); perr != nil || d < time.Second || d%time.Second != 0 {
			return nil, field.Invalid(schedulePath, schedule, "@every needs a whole number of seconds, at least 1s")
		}
	case *cron.SpecSchedule:
		p.Location = loc
		if !matchesEveryHour(p) {
			wall := *p
			wall.Location = time.UTC
			s.wall = &wall
		}
		// The parser accepts days that no month has, such as February
		// 30; such a schedule never fires. The cron library looks five
		// years ahead, which covers February 29.
		if p.Next(time.Unix(0, 0)).IsZero() {
			return nil, field.Invalid(schedulePath, schedule, "never matches a date: no month has that day")
		}
	default:
		return nil, field.Invalid(schedulePath, schedule, fmt.Sprintf("unsupported schedule type %T", parsed))
	}
	return s, nil
}

// parseCron parses a standard cron line like the built-in CronJob does,
// recovering from the panics the cron library has on some malformed input.
func parseCron(schedule string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("malformed schedule: %v", r)
		}
	}()
	return cron.ParseStandard(schedule)
}

func loadLocation(timeZone string) (*time.Location, error) {
	if timeZone == "" {
		return time.UTC, nil
	}
	// "Local" would be the operator's own zone, which differs from node to
	// node; the CRD refuses it too.
	if timeZone == "Local" {
		return nil, field.Invalid(timeZonePath, timeZone, "must be an IANA time zone name such as Europe/Berlin, not Local")
	}
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		return nil, field.Invalid(timeZonePath, timeZone, "unknown time zone: not in the IANA time zone database")
	}
	return loc, nil
}

// Location is the schedule's time zone.
func (s *Schedule) Location() *time.Location { return s.loc }

// Next returns the first scheduled time after t, or the zero time if there
// is none within five years. Times are whole seconds.
func (s *Schedule) Next(t time.Time) time.Time {
	if s.wall == nil {
		return s.cron.Next(t)
	}
	return s.nextOnWallClock(t)
}
