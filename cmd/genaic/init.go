package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/genaic/genaic/onnx"
	"github.com/genaic/genaic/passes"
)

func init() {
	register(command{
		name:    "init",
		usage:   "init MODEL.onnx...|DIR [-o DIR] [--images | --audio | --video | --text] [--force] [--print]",
		summary: "write a starting inference_metadata.yaml from ONNX models (ports, dtypes and shapes read from the graphs)",
		run:     runInit,
	})
}

// metadataName is the document a package folder holds.
const metadataName = "inference_metadata.yaml"

func runInit(e *env, args []string) int {
	c := commands["init"]
	flags := flag.NewFlagSet("init", flag.ContinueOnError)
	dir := flags.String("o", "", "the package folder the document is written to; it must hold every model (default: the first model's folder)")
	force := flags.Bool("force", false, "replace an existing "+metadataName)
	print := flags.Bool("print", false, "print the document to standard output instead of writing it")
	images := flags.Bool("images", false, "for one model whose input is float images [batch, 3, height, width] (or channels last): write a package that takes encoded images (PNG, JPEG, GIF, WebP) as items, preprocesses them as ImageNet encoders take them, and groups them")
	audio := flags.Bool("audio", false, "for one model whose input is log-mel features [batch, 80, 3000] (or frames first; 128 bands alike), as Whisper's encoder takes them, or samples [batch, samples] as wav2vec 2.0's: write a package that takes WAV clips as items, any number per request, computes the model's features of each, and groups the clips")
	video := flags.Bool("video", false, "for one model whose input is float clips [batch, frames, 3, height, width] (or each frame channels last), as VideoMAE's, or [batch, 3, frames, height, width], as 3D convolutional networks': write a package that takes a clip per request, its frames encoded images (PNG, JPEG, GIF, WebP) as items, samples the frames the model takes, preprocesses each as ImageNet encoders take images, and groups the clips")
	text := flags.Bool("text", false, "for one model of token ids [batch, sequence] (token types alike) and, where it masks padding, their lengths [batch] (genaic mask-lengths rewrites a mask into them): write a package that takes segments of token ids as items, pads them by their lengths and groups them")
	models, ok := parseFlags(e, flags, c, args)
	if !ok {
		return exitUsage
	}
	given := 0
	for _, f := range []bool{*images, *audio, *video, *text} {
		if f {
			given++
		}
	}
	if given > 1 {
		e.errorf("init: --images, --audio, --video and --text write packages of different inputs; give one")
		return exitUsage
	}
	if len(models) == 0 {
		flags.Usage()
		return exitUsage
	}
	for _, m := range models {
		if !noStdin(e, "init", "MODEL", m, "init reads each model from its file; give its path") {
			return exitUsage
		}
	}
	if len(models) == 1 {
		if info, err := os.Stat(models[0]); err == nil && info.IsDir() {
			folder := models[0]
			if models, err = filepath.Glob(filepath.Join(folder, "*.onnx")); err != nil {
				return ioError(e, err)
			}
			if len(models) == 0 {
				e.errorf("init: the folder %s holds no .onnx model; give the models' paths, or copy them into it", folder)
				return exitUsage
			}
			if *dir == "" {
				*dir = folder
			}
		}
	}
	if !noStdin(e, "init", "-o", *dir, "use --print to write the document to standard output") {
		return exitUsage
	}
	if *dir == "" {
		*dir = filepath.Dir(models[0])
	}
	absDir, err := filepath.Abs(*dir)
	if err != nil {
		return ioError(e, err)
	}
	if info, err := os.Stat(absDir); errors.Is(err, fs.ErrNotExist) {
		e.errorf("init: the package folder %s does not exist; a package names its models by paths inside its folder: make the folder, copy the models into it, and give those copies", *dir)
		return exitUsage
	} else if err != nil {
		return ioError(e, err)
	} else if !info.IsDir() {
		e.errorf("init: -o %s is not a folder; give the package folder that holds the models", *dir)
		return exitUsage
	}

	var comps []*initComponent
	seen := map[string]string{}
	names := map[string]bool{}
	for _, m := range models {
		abs, err := filepath.Abs(m)
		if err != nil {
			return ioError(e, err)
		}
		if first, dup := seen[abs]; dup {
			e.errorf("init: model %s is given twice (also as %s); give each model once", m, first)
			return exitUsage
		}
		seen[abs] = m
		rel, err := filepath.Rel(absDir, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			e.errorf("init: model %s lies outside the package folder %s; a package names its models by paths inside its folder: copy the model there, or give -o the folder that holds it", m, *dir)
			return exitUsage
		}
		g, err := onnx.Read(m)
		switch {
		case errors.Is(err, onnx.ErrNotONNX):
			e.errorf("init: %s: %v; init reads ONNX model files (.onnx)", m, err)
			return exitUsage
		case err != nil:
			return ioError(e, err)
		}
		comp, err := newInitComponent(freshName(componentName(m), names), filepath.ToSlash(rel), g)
		if err != nil {
			e.errorf("init: %s: %v", m, err)
			return exitUsage
		}
		// --images, --audio, --video and --text run the model on their own
		// inputs instead (settleRows).
		if !*images && !*audio && !*video && !*text {
			if why := probeOutputs(m, comp); why != "" {
				e.errorf("init: %s: its outputs' dynamic dimensions keep the graph's names, not probed: %s", m, why)
			}
		}
		comps = append(comps, comp)
	}
	// --images, --audio, --video and --text write the package of one
	// model's items.
	var items func(path string, c *initComponent) (string, error)
	flagName, encoder := "--images", "image encoder"
	switch {
	case *images:
		items = imagesPackage
	case *audio:
		items, flagName, encoder = audioPackage, "--audio", "speech encoder"
	case *video:
		items, flagName, encoder = videoPackage, "--video", "video encoder"
	case *text:
		items, flagName, encoder = textPackage, "--text", "text encoder"
	}
	var src []byte
	if items == nil {
		src = []byte(initDocument(comps))
	} else {
		if len(comps) != 1 {
			e.errorf("init: %s writes the package of one %s; give one model", flagName, encoder)
			return exitUsage
		}
		doc, err := items(models[0], comps[0])
		if err != nil {
			e.errorf("init: %s: %v", models[0], err)
			return exitUsage
		}
		src = []byte(doc)
	}

	target := filepath.Join(*dir, metadataName)
	if !*print {
		if info, err := os.Lstat(target); err == nil {
			if info.IsDir() || !*force {
				e.errorf("init: %s already exists; genaic init never replaces a document unless given --force (or choose another folder with -o)", target)
				return exitUsage
			}
			if !info.Mode().IsRegular() && info.Mode()&fs.ModeSymlink == 0 {
				e.errorf("init: %s exists and is neither a file nor a link; init replaces only those, even with --force", target)
				return exitUsage
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return ioError(e, err)
		}
	}
	// The document is checked against the models before it is written:
	// what init writes, check accepts.
	d, err := passes.CheckSource(target, src, passes.Options{Models: passes.NewDirModels(absDir), ModelsRequired: true, Adapters: builtinAdapters})
	if err != nil {
		e.errorf("init: checking the document: %v", err)
		return exitUsage
	}
	if !d.Valid() {
		renderDiags(e, d)
		e.errorf("init: the document written from these models does not pass check, which is a genaic defect; please report it with the models' graphs (genaic wrote nothing)")
		return exitDiags
	}
	if *print {
		if _, err := e.stdout.Write(src); err != nil {
			return ioError(e, err)
		}
		return exitOK
	}
	if err := writeNew(target, src); err != nil {
		return ioError(e, err)
	}
	cn := make([]string, len(comps))
	for i, c := range comps {
		cn[i] = c.name
	}
	if *text {
		fmt.Fprintf(e.stdout, "wrote %s (segments of token ids in, %s on many requests' segments at once); next: `genaic run %s --verify`: grouped answers against answers alone\n",
			target, cn[0], *dir)
		return exitOK
	}
	if *audio {
		front := "Whisper's log-mel features of each"
		if au, _ := audioInputOf(comps[0]); au.samples {
			front = "their samples at 16 kHz, standardized"
		}
		fmt.Fprintf(e.stdout, "wrote %s (WAV clips in, any number per request, %s, then %s on many requests' clips at once); next: check the front end against your model's (the document's first comment), then `genaic run %s --verify`: grouped answers against answers alone\n",
			target, front, cn[0], *dir)
		return exitOK
	}
	if *video {
		fmt.Fprintf(e.stdout, "wrote %s (a clip of encoded frames per request in, sampled and preprocessed, then %s on many requests' clips at once); next: check the preprocessing against your model's (the document's first comment), then `genaic run %s --verify`: grouped answers against answers alone\n",
			target, cn[0], *dir)
		return exitOK
	}
	if *images {
		fmt.Fprintf(e.stdout, "wrote %s (encoded images in, preprocessed, then %s on many requests' images at once); next: check the preprocessing against your model's (the document's first comment), then `genaic run %s --verify`: grouped answers against answers alone\n",
			target, cn[0], *dir)
		return exitOK
	}
	fmt.Fprintf(e.stdout, "wrote %s (%d %s: %s); next: declare grouping where its comments show, run `genaic check %s` after each edit, then `genaic run %s --verify`: grouped answers against answers alone\n",
		target, len(comps), plural(len(comps), "component"), strings.Join(cn, ", "), *dir, *dir)
	return exitOK
}

// nextInit is the line that tells what to run after a rewrite wrote the
// model at path: init, with the flag that writes its items' package where
// one does, else plainly, after what to declare (todo, where not "").
func nextInit(path, todo string) string {
	if flag := initFlag(path); flag != "" {
		return fmt.Sprintf("next: `genaic init %s%s` writes a package that takes its items and groups them", flag, path)
	}
	return fmt.Sprintf("next: %s`genaic init %s` writes a starting document", todo, path)
}

// initFlag is the flag init takes for the model at path, followed by a
// space: --images, --audio, --video or --text where it takes images,
// log-mel features or samples, video clips or segments of token ids, ""
// otherwise.
func initFlag(path string) string {
	g, err := onnx.Read(path)
	if err != nil {
		return ""
	}
	c, err := newInitComponent("model", filepath.Base(path), g)
	if err != nil {
		return ""
	}
	if _, err := imageInputOf(c); err == nil {
		return "--images "
	}
	if _, err := audioInputOf(c); err == nil {
		return "--audio "
	}
	if _, err := videoInputOf(c); err == nil {
		return "--video "
	}
	if _, err := textInputOf(c); err == nil {
		return "--text "
	}
	return ""
}

// writeNew writes b to a file beside path, then renames it onto path: a
// reader never sees half a document, and an existing path (a link
// included) is replaced, never written through.
func writeNew(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".inference_metadata-*.yaml")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
