package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Server is a long-running command's Main: ParseFlags, then Run, which
// returns once it serves, then Close.
type Server interface {
	ParseFlags(args []string) error
	Run(ctx context.Context) error
	Close() error
}

// Serve runs s as the program name with the process's arguments until
// SIGINT or SIGTERM, or until stop (which may be nil) yields an error, and
// then closes it. It exits the process: 2 for bad flags, 1 when running or
// closing fails or stop fired, 0 otherwise.
func Serve(name string, s Server, stop <-chan error) {
	if err := s.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		s.Close()
		os.Exit(1)
	}
	code := 0
	select {
	case <-ctx.Done():
	case err := <-stop:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		code = 1
	}
	cancel() // a second signal now kills the process
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		code = 1
	}
	os.Exit(code)
}
