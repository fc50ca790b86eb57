package bench

import (
	"bufio"
	"os"
	"strings"
)

// The node levels' input files: one file of Debezium lines (the changelog
// joins, tables: in the job), or one file of plain JSON events per side
// source of an event-time join (Workload.NodeSources).

// sideFile is the file of w's side source named source, next to inPath
// (the one-file workloads' input).
func sideFile(inPath, source string) string {
	return strings.TrimSuffix(inPath, ".jsonl") + "." + source + ".jsonl"
}

// writeNodeInput writes w's node input: lines to inPath, or, for a
// workload with NodeSources, each source's lines of in to its sideFile.
// It returns the files written.
func writeNodeInput(w *Workload, in Input, lines [][]byte, inPath string) ([]string, error) {
	if len(w.NodeSources) == 0 {
		return []string{inPath}, writeLines(inPath, lines)
	}
	var paths []string
	for _, s := range w.NodeSources {
		p := sideFile(inPath, s.Name)
		paths = append(paths, p)
		if err := writeLines(p, in.Sides[s.Name]); err != nil {
			return paths, err
		}
	}
	return paths, nil
}

// writeLines writes lines to path, one a line.
func writeLines(path string, lines [][]byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	for _, l := range lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
