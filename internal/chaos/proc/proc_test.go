package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// childEnv makes the test binary a child: "serve" prints the marker and
// runs until killed, "exit" prints a line and exits with status 3.
const childEnv = "PROC_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "serve":
		fmt.Println("child serving")
		time.Sleep(time.Hour) // the child's whole life: it runs until killed
		os.Exit(0)
	case "exit":
		fmt.Println("child gives up")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func child(t *testing.T, mode string) *Proc {
	t.Helper()
	p := &Proc{Name: "child-" + mode, Argv: []string{os.Args[0]}, Env: []string{childEnv + "=" + mode},
		Log: filepath.Join(t.TempDir(), mode+".log"), Marker: "child serving"}
	p.Ready = func(context.Context) error {
		if !p.IsMarked() {
			return errors.New("not marked yet")
		}
		return nil
	}
	t.Cleanup(p.Close)
	return p
}

// TestKillAndRestart: a child that printed its marker is ready; killed by
// the harness, it is gone and its exit is not unexpected; restarted with
// the same command line, it is ready again, and its log holds both lives.
func TestKillAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := child(t, "serve")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.Alive() || !p.IsMarked() {
		t.Fatalf("after WaitReady: alive %v, marked %v; want both", p.Alive(), p.IsMarked())
	}
	if err := p.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Alive() || p.IsMarked() {
		t.Fatalf("after Kill: alive %v, marked %v; want neither", p.Alive(), p.IsMarked())
	}
	if gone, err := p.UnexpectedExit(); gone {
		t.Errorf("a kill the harness asked for counts as an unexpected exit (%v)", err)
	}
	if err := p.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if !p.IsMarked() {
		t.Error("after Restart: not marked")
	}
	if got, want := p.CountLines("child serving"), 2; got != want {
		t.Errorf("log has %d marker lines, want %d", got, want)
	}
}

// TestUnexpectedExit: a child that exits on its own is reported once, with
// its exit status, and a start that dies before it is ready fails WaitReady.
func TestUnexpectedExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := child(t, "exit")
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitExit(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	gone, err := p.UnexpectedExit()
	if !gone || err == nil {
		t.Fatalf("UnexpectedExit = %v, %v; want true and the exit status", gone, err)
	}
	if again, _ := p.UnexpectedExit(); again {
		t.Error("the same exit reported twice")
	}
	if p.ExitError() == nil {
		t.Error("ExitError = nil for exit status 3")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(ctx); !errors.Is(err, errExited) {
		t.Errorf("WaitReady of a child that keeps exiting = %v, want %v", err, errExited)
	}
}
