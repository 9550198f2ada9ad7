package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// output is where run writes the responses: --out (or --out-dir's
// responses file), opened before the run so that a run whose responses
// could not be written never starts, or standard output.
type output struct {
	w       io.Writer
	file    *os.File
	created bool // the file did not exist: remove it if nothing is written

	// Streaming (--format jsonl): one line per response, flushed.
	mu  sync.Mutex
	bw  *bufio.Writer
	err error // the first error writing a line
}

// openOutput opens --out for writing without truncating it yet: an
// existing file keeps its contents until the responses replace them.
func openOutput(e *env, path string) (*output, error) {
	if path == "" {
		return &output{w: e.stdout}, nil
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return nil, fmt.Errorf("--out %s is a folder; give a file", path)
	}
	created := false
	file, err := os.OpenFile(path, os.O_WRONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		file, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		created = err == nil
	}
	if err != nil {
		return nil, err
	}
	return &output{w: file, file: file, created: created}, nil
}

// discard closes an output nothing was written to, removing the file it
// created.
func (o *output) discard() {
	if o.file == nil {
		return
	}
	o.file.Close()
	if o.created {
		os.Remove(o.file.Name())
	}
}

// truncate empties the output's file, if it is a regular one.
func (o *output) truncate() error {
	if o.file == nil {
		return nil
	}
	if info, err := o.file.Stat(); err == nil && info.Mode().IsRegular() {
		return o.file.Truncate(0)
	}
	return nil
}

// close flushes w and closes the output's file, returning the first error.
func (o *output) close(err error, bw *bufio.Writer) error {
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if o.file != nil {
		if cerr := o.file.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// write replaces the output's contents with the responses document.
func (o *output) write(resps []vm.Response, stats *vm.Stats, store jsonio.Store) error {
	if err := o.truncate(); err != nil {
		return err
	}
	bw := bufio.NewWriter(o.w)
	return o.close(jsonio.WriteResponsesWith(bw, resps, stats, store), bw)
}

// begin starts a stream of responses (--format jsonl), replacing the
// output's contents.
func (o *output) begin() error {
	o.bw = bufio.NewWriter(o.w)
	return o.truncate()
}

// emit writes one response as a line and flushes it. It may be called
// from many goroutines; after a failed write it writes nothing more, and
// end reports the failure.
func (o *output) emit(r vm.Response, store jsonio.Store) {
	line, err := jsonio.EncodeResponse(r, store)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return
	}
	if err == nil {
		o.bw.Write(line)
		o.bw.WriteByte('\n')
		err = o.bw.Flush()
	}
	o.err = err
}

// end ends a stream: with stats, a last line {"stats": {...}}.
func (o *output) end(stats *vm.Stats) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	err := o.err
	if err == nil && stats != nil {
		err = jsonio.WriteStatsLine(o.bw, stats)
	}
	return o.close(err, o.bw)
}

// outDir is --out-dir: each output of each response is written there as
// REQUEST/OUTPUT.npy, with REQUEST and OUTPUT names made from the request
// id and the output name that stay inside the folder and never collide.
type outDir struct {
	path    string
	root    *os.Root
	mu      sync.Mutex
	outputs map[string]string // output name -> file name
	outUsed map[string]bool
	reqs    map[string]string // request id -> folder name
	made    map[string]bool   // request folders made
}

// indexNames are the responses files --out-dir writes itself.
var indexNames = []string{"responses.json", "responses.jsonl"}

// openOutDir makes the folder if it is missing and checks that it takes
// files, before anything runs. A workflow output of a dtype .npy cannot
// hold is refused here.
func openOutDir(dir string, f *plan.File) (*outDir, error) {
	for _, o := range f.IR.Outputs {
		if o.Contract != nil && o.Contract.DType != "" {
			if err := jsonio.NPYWritable(o.Contract.DType); err != nil {
				return nil, fmt.Errorf("%s: workflow output %q: %v", dir, o.Name, err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	probe, err := os.CreateTemp(dir, ".genaic-probe-*")
	if err != nil {
		return nil, err
	}
	probe.Close()
	os.Remove(probe.Name())
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d := &outDir{path: dir, root: root, outputs: map[string]string{}, outUsed: map[string]bool{}, made: map[string]bool{}}
	for _, o := range f.IR.Outputs {
		d.outputs[o.Name] = uniqueName(safeName(o.Name), d.outUsed)
	}
	return d, nil
}

func (d *outDir) close() { d.root.Close() }

// name gives each request its folder, in the order of the requests, so
// that the names do not depend on which request finished first.
func (d *outDir) name(reqs []vm.Request) {
	used := map[string]bool{}
	for _, n := range indexNames {
		used[n] = true
	}
	d.reqs = make(map[string]string, len(reqs))
	for _, r := range reqs {
		d.reqs[r.ID] = uniqueName(safeName(r.ID), used)
	}
}

// store writes one output of a response and returns its path relative to
// the folder (jsonio.Store). Files of earlier runs with the same names
// are replaced.
func (d *outDir) store(id, output string, t *backend.Tensor) (string, error) {
	req, ok := d.reqs[id]
	if !ok {
		return "", fmt.Errorf("no folder for request %q", id)
	}
	if err := jsonio.NPYWritable(t.DType); err != nil {
		return "", err
	}
	d.mu.Lock()
	file, ok := d.outputs[output]
	if !ok { // not a declared workflow output: named on first sight
		file = uniqueName(safeName(output), d.outUsed)
		d.outputs[output] = file
	}
	if !d.made[req] {
		if err := d.root.Mkdir(req, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			d.mu.Unlock()
			return "", err
		}
		d.made[req] = true
	}
	d.mu.Unlock()
	rel := path.Join(req, file+".npy")
	f, err := d.root.Create(rel)
	if err != nil {
		return "", err
	}
	err = jsonio.WriteNPY(f, t)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v", path.Join(d.path, rel), err)
	}
	return rel, nil
}

// maxNameLen bounds the file names made from ids.
const maxNameLen = 64

// safeName makes a file name of s: ASCII letters, digits, '-', '_' and
// '.' are kept, anything else (a separator included) becomes '_'; leading
// dots are dropped (no "..", no hidden file) and the name is cut to
// maxNameLen bytes.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= maxNameLen {
			break
		}
	}
	name := strings.TrimLeft(b.String(), ".")
	if name == "" {
		name = "_"
	}
	return name
}

// uniqueName returns name, or name-2, name-3, ... the first not yet used
// (compared without case, for case-insensitive file systems), and marks
// it used.
func uniqueName(name string, used map[string]bool) string {
	cand := name
	for k := 2; used[strings.ToLower(cand)]; k++ {
		cand = fmt.Sprintf("%s-%d", name, k)
	}
	used[strings.ToLower(cand)] = true
	return cand
}
