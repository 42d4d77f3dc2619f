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

// Stopper is a Server that says what it is about to do when a signal
// stops it: Close then waits for work in flight, silently otherwise.
type Stopper interface {
	Stopping(sig os.Signal)
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
	// A channel rather than NotifyContext alone, to know which signal came.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got os.Signal
	go func() {
		select {
		case got = <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := s.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		s.Close()
		os.Exit(1)
	}
	code := 0
	select {
	case <-ctx.Done():
		if st, ok := s.(Stopper); ok && got != nil {
			st.Stopping(got)
		}
	case err := <-stop:
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		code = 1
	}
	signal.Stop(sigs) // a second signal now kills the process
	cancel()
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		code = 1
	}
	os.Exit(code)
}
