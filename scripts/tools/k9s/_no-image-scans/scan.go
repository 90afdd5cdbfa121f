// kubectl-drift's test environment builds k9s without its image vulnerability scanner: this file
// takes the place of k9s's internal/vul/scan.go through `go build -overlay` (see scanner.go here):
// the scan types the rest of k9s uses, without the function that read Grype's matches.

package vul

import (
	"fmt"
	"io"
)

// Scans tracks scans per image.
type Scans map[string]*Scan

// Dump writes every scan to w.
func (s Scans) Dump(w io.Writer) error {
	for k, v := range s {
		_, _ = fmt.Fprintf(w, "Image: %s -- ", k)
		v.Tally.Dump(w)
		_, _ = fmt.Fprintln(w)
		if err := v.Dump(w); err != nil {
			return err
		}
	}
	return nil
}

// Scan is one image's scan.
type Scan struct {
	ID    string
	Table *table
	Tally tally
}

// Dump writes the scan's table to w.
func (s *Scan) Dump(w io.Writer) error {
	return s.Table.dump(w)
}

func colorize(rr []string) []string {
	crr := make([]string, len(rr))
	copy(crr, rr)
	crr[len(crr)-1] = sevColor(crr[len(crr)-1])
	return crr
}
