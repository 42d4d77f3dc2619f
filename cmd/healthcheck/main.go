// Command healthcheck asks an HTTP endpoint whether a process is healthy:
// it exits 0 when GET URL answers 200, and 1 otherwise, saying why on
// standard error. It exists for container healthchecks (docker compose),
// since the image is distroless and has neither a shell nor curl or wget:
//
//	healthcheck http://127.0.0.1:8080/readyz
//
// The timeout is two seconds, or the duration of --timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run checks the URL of args and returns the exit code.
func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: healthcheck [--timeout 2s] http://127.0.0.1:8080/readyz")
		return 2
	}
	url := fs.Arg(0)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "healthcheck: %s: %v\n", url, err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "healthcheck: %s: %v (is the process running with --http on that address?)\n", url, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "healthcheck: %s: %s: %s\n", url, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	return 0
}
