package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args into fs. A bad flag comes back as one line, the flag
// package's error and a pointer to --help, with nothing printed: the full
// usage (eighty lines and more) would bury the line that says what was
// wrong. -h and --help print fs's usage and return flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	if usage == nil {
		usage = func() {
			fmt.Fprintf(fs.Output(), "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
	}
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return err
	case err != nil:
		return fmt.Errorf("%w (%s --help lists the flags)", err, fs.Name())
	}
	return nil
}
