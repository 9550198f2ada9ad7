package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/plan"
	"github.com/genaic/genaic/vm"
	"github.com/genaic/genaic/vm/jsonio"
)

// output is where run writes the responses: --out (or --out-dir's
// responses file), opened before the run so that a run whose responses
// could not be written never starts, or standard output. A file is
// written as a temporary file beside it, renamed over it once the
// responses are whole: until then an existing file keeps its contents,
// whatever stops the run.
type output struct {
	w    io.Writer
	file *os.File
	// final is the path file is renamed to once written; "" where file is
	// written in place (a device or a FIFO) or w is standard output.
	final string

	// Streaming (--format jsonl): one line per response, flushed.
	mu  sync.Mutex
	bw  *bufio.Writer
	err error // the first error writing a line
}

// openOutput opens a temporary file beside path for the responses, where
// path is a regular file or missing; a device or FIFO is written in
// place. follow says whether a symbolic link at path is followed (--out,
// which the user names: the file it points to is replaced) or replaced
// itself (a name run chose inside --out-dir, where a link could lead out
// of the folder).
func openOutput(e *env, path string, follow bool) (*output, error) {
	if path == "" {
		return &output{w: e.stdout}, nil
	}
	target := path
	if follow {
		if resolved, err := filepath.EvalSymlinks(path); err == nil {
			target = resolved
		}
	}
	info, err := os.Lstat(target)
	switch {
	case err == nil && info.IsDir():
		return nil, fmt.Errorf("--out %s is a folder; give a file", path)
	case err == nil && follow && !info.Mode().IsRegular():
		file, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &output{w: file, file: file}, nil
	case err == nil && info.Mode().IsRegular():
		// An existing file run may not write is refused, as it was
		// before the responses went through a temporary file.
		file, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		file.Close()
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	temps.Lock()
	defer temps.Unlock()
	file, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return nil, err
	}
	temps.paths[file.Name()] = true
	return &output{w: file, file: file, final: target}, nil
}

// temps are the temporary files of outputs not yet renamed: a second
// signal, which exits at once, removes them (removeTemps). The lock also
// makes a rename and that removal exclusive.
var temps = struct {
	sync.Mutex
	paths map[string]bool
}{paths: map[string]bool{}}

// removeTemps removes every temporary output file, before an exit that
// writes no responses.
func removeTemps() {
	temps.Lock()
	defer temps.Unlock()
	for p := range temps.paths {
		os.Remove(p)
		delete(temps.paths, p)
	}
}

// discard closes an output nothing was written to, removing its
// temporary file.
func (o *output) discard() {
	if o.file == nil {
		return
	}
	o.file.Close()
	if o.final != "" {
		temps.Lock()
		defer temps.Unlock()
		os.Remove(o.file.Name())
		delete(temps.paths, o.file.Name())
	}
}

// close flushes w and closes the output's file, then, where nothing
// failed, renames its temporary file over the final one; where something
// did, the temporary file is removed. It returns the first error.
func (o *output) close(err error, bw *bufio.Writer) error {
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	if o.file == nil {
		return err
	}
	if o.final != "" && err == nil {
		err = o.file.Sync()
	}
	if cerr := o.file.Close(); err == nil {
		err = cerr
	}
	if o.final == "" {
		return err
	}
	temps.Lock()
	defer temps.Unlock()
	tmp := o.file.Name()
	delete(temps.paths, tmp)
	if err == nil {
		err = os.Rename(tmp, o.final)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// write replaces the output's contents with the responses document.
func (o *output) write(resps []vm.Response, stats *vm.Stats, store jsonio.Store) error {
	bw := bufio.NewWriter(o.w)
	return o.close(jsonio.WriteResponsesWith(bw, resps, stats, store), bw)
}

// begin starts a stream of responses (--format jsonl), replacing the
// output's contents.
func (o *output) begin() {
	o.bw = bufio.NewWriter(o.w)
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
	stored  map[string]error  // files written (nil) or failed, by path
	seq     int               // numbers temporary names
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
	d := &outDir{path: dir, root: root, outputs: map[string]string{}, outUsed: map[string]bool{}, made: map[string]bool{}, stored: map[string]error{}}
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
// the folder (jsonio.Store). Each file is written whole under a temporary
// name and renamed into place, replacing a file of an earlier run of the
// same name (a link there is replaced, never followed); a request folder
// that is anything but a folder (a link named like the request) is not
// written into. The outcome is kept: asked again (settle, then the
// responses document), the file is not written twice.
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
	rel := path.Join(req, file+".npy")
	if s, ok := d.stored[rel]; ok {
		d.mu.Unlock()
		return rel, s
	}
	err := d.folder(req)
	d.seq++
	tmp := path.Join(req, fmt.Sprintf(".%s.npy.%d.tmp", file, d.seq))
	d.mu.Unlock()
	if err == nil {
		err = d.writeNPY(tmp, rel, t)
	}
	d.mu.Lock()
	d.stored[rel] = err
	d.mu.Unlock()
	if err != nil {
		return "", err
	}
	return rel, nil
}

// folder makes a request's folder, or checks that the one there is a
// folder and not a link to one. Called with d.mu held.
func (d *outDir) folder(req string) error {
	if d.made[req] {
		return nil
	}
	if err := d.root.Mkdir(req, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	info, err := d.root.Lstat(req)
	if err != nil {
		return err
	}
	if !info.IsDir() {
		return fmt.Errorf("%s is not a folder (%v); it is not followed or replaced", filepath.Join(d.path, req), info.Mode().Type())
	}
	d.made[req] = true
	return nil
}

// writeNPY writes t to tmp (a name no file has: never a link followed),
// then renames it to rel.
func (d *outDir) writeNPY(tmp, rel string, t *backend.Tensor) error {
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	err = jsonio.WriteNPY(f, t)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.root.Rename(tmp, rel)
	}
	if err != nil {
		d.root.Remove(tmp)
		return fmt.Errorf("%s: %v", path.Join(d.path, rel), err)
	}
	return nil
}

// settle writes the outputs of a response that has them and returns it;
// where one cannot be written, the response comes back failed with that
// error in place of its outputs: one entry of the folder that cannot be
// written fails its request alone.
func (d *outDir) settle(r vm.Response) vm.Response {
	if r.Err != nil {
		return r
	}
	if _, err := jsonio.EncodeResponse(r, d.store); err != nil {
		r.Err = fmt.Errorf("--out-dir: its outputs could not be written: %v", err)
	}
	return r
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
