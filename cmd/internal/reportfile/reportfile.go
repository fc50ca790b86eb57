// Package reportfile writes a benchmark's JSON report to the file its
// command line names. It owns the file's creation and closing only; the
// report's content is its caller's.
package reportfile

import (
	"fmt"
	"io"
	"os"
)

// Write creates path, writes the report into it with write, and closes it;
// an empty path writes nothing. It says on log where the report went.
func Write(path, prog string, log io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintln(log, prog+": report written to", path)
	return nil
}
