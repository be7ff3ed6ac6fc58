package instance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Main runs `platform-operator instance SUBCOMMAND`: run (the instance
// manager), install DEST, basebackup (a BackupJob run's copy of a
// PostgresCluster into a claim), basebackup-to-store (into its object
// store) or verify (a restore drill's query). It returns the exit code.
func Main(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: platform-operator instance run [flags] | install DEST | basebackup [flags] | basebackup-to-store [flags] | verify [flags]")
		return 2
	}
	switch args[0] {
	case "watchdog":
		// Internal: started by `instance run`, see RunWatchdog.
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: platform-operator instance watchdog FILE (started by instance run)")
			return 2
		}
		zl, err := zap.NewProduction()
		if err != nil {
			fmt.Fprintln(stderr, "instance watchdog:", err)
			return 1
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := RunWatchdog(ctx, args[1], zapr.NewLogger(zl).WithName("watchdog")); err != nil {
			fmt.Fprintln(stderr, "instance watchdog:", err)
			return 1
		}
		return 0
	case "install":
		if len(args) != 2 {
			fmt.Fprintln(stderr, "usage: platform-operator instance install DEST")
			return 2
		}
		if err := Install(args[1]); err != nil {
			fmt.Fprintln(stderr, "instance install:", err)
			return 1
		}
		return 0
	case "run":
		opts, err := ParseOptions(args[1:], getenv, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(stderr, "instance run:", err)
			return 2
		}
		zl, err := zap.NewProduction()
		if err != nil {
			fmt.Fprintln(stderr, "instance run:", err)
			return 1
		}
		log := zapr.NewLogger(zl).WithValues("instance", opts.PodName)
		// The cache and client of controller-runtime log through it;
		// unset, their first line is a warning with a stack trace instead.
		ctrllog.SetLogger(log)
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := Run(ctx, opts, log); err != nil {
			log.Error(err, "The instance manager stopped")
			return 1
		}
		return 0
	case "basebackup":
		opts, err := ParseBaseBackupOptions(args[1:], getenv, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(stderr, "instance basebackup:", err)
			return 2
		}
		zl, err := zap.NewProduction()
		if err != nil {
			fmt.Fprintln(stderr, "instance basebackup:", err)
			return 1
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if _, err := TakeBaseBackup(ctx, opts, zapr.NewLogger(zl)); err != nil {
			// The container's last words are its termination message
			// when it wrote none: the operator records them.
			fmt.Fprintln(stderr, "instance basebackup:", err)
			return 1
		}
		return 0
	case "wal-archive", "wal-restore":
		return archiveTool(args, stderr)
	case "basebackup-to-store":
		opts, err := ParseStoreBackupOptions(args[1:], getenv, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(stderr, "instance basebackup-to-store:", err)
			return 2
		}
		zl, err := zap.NewProduction()
		if err != nil {
			fmt.Fprintln(stderr, "instance basebackup-to-store:", err)
			return 1
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if _, err := TakeStoreBackup(ctx, opts, time.Now, zapr.NewLogger(zl)); err != nil {
			fmt.Fprintln(stderr, "instance basebackup-to-store:", err)
			return 1
		}
		return 0
	case "verify":
		opts, err := ParseVerifyOptions(args[1:], getenv, stderr)
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(stderr, "instance verify:", err)
			return 2
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := Verify(ctx, opts); err != nil {
			fmt.Fprintln(stderr, "instance verify:", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stderr, "unknown subcommand %q: run, install, basebackup, basebackup-to-store, verify, wal-archive or wal-restore\n", args[0])
	return 2
}

// archiveTool runs `instance wal-archive --config FILE PATH` (PostgreSQL's
// archive_command) or `instance wal-restore --config FILE NAME PATH` (its
// restore_command). PostgreSQL logs what they write to stderr.
func archiveTool(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("instance "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the object store's configuration, written by the instance manager")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	want := 1
	if args[0] == "wal-restore" {
		want = 2
	}
	if *config == "" || fs.NArg() != want {
		fmt.Fprintf(stderr, "usage: platform-operator instance %s --config FILE %s\n", args[0], map[int]string{1: "PATH", 2: "NAME PATH"}[want])
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if args[0] == "wal-archive" {
		err = ArchiveWAL(ctx, *config, fs.Arg(0))
	} else {
		err = RestoreWAL(ctx, *config, fs.Arg(0), fs.Arg(1))
	}
	switch {
	case errors.Is(err, errNotArchived):
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "instance %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
