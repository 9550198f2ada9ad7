package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// TestDeployExamples: the containers of deploy/'s manifests start genaic
// serve with arguments it takes, their files mapped to this machine (the
// models' volume to a package of testdata, a ConfigMap's file to its
// text), and it becomes ready with each model's execution planned, as the
// examples say (docs/serve.md, "Execution planning"), and its config
// applied; every path an argument names is on a volume the container
// mounts. SIGTERM then drains it and it exits 0.
func TestDeployExamples(t *testing.T) {
	for _, tc := range []struct {
		file     string
		modelsAt string // where the models' volume is mounted
		pkg      bool   // it holds one package (else a repository)
		want     string // the model served
		delay    string // its max_delay, as the example sets it
	}{
		{"kubernetes/deployment.yaml", "/models", false, "image_padded", "10ms"},
		{"kserve/servingruntime.yaml", "/mnt/models", true, "demo", "5ms"}, // mounted by KServe
	} {
		t.Run(tc.file, func(t *testing.T) {
			docs := manifests(t, filepath.Join("..", "..", "deploy", tc.file))
			c := container(t, docs)
			local := map[string]string{} // mount path -> folder here
			for _, m := range c.VolumeMounts {
				local[m.MountPath] = t.TempDir()
			}
			pkg, err := filepath.Abs(imagePkg)
			if err != nil {
				t.Fatal(err)
			}
			if tc.pkg {
				local[tc.modelsAt] = pkg
			} else {
				local[tc.modelsAt] = t.TempDir()
				if err := os.Symlink(pkg, filepath.Join(local[tc.modelsAt], "image_padded")); err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			for _, a := range c.Args[1:] { // after "serve"
				flag, value, isFlag := strings.Cut(a, "=")
				switch {
				case flag == "--http" || flag == "--grpc":
					continue // startServe listens on free ports
				case !isFlag:
					flag, value = "", a
				}
				if strings.HasPrefix(value, "/") {
					path := value
					value = onVolume(t, local, path)
					if flag == "--config" {
						writeConfigMapFile(t, docs, path, value)
					}
				}
				value = strings.ReplaceAll(value, "{{.Name}}", "demo")
				if flag != "" {
					value = flag + "=" + value
				}
				args = append(args, value)
			}
			// --workers=0: the example's own execution settings, which
			// startServe would otherwise fix at one worker.
			p := startServe(t, append([]string{"--workers=0"}, args...)...)
			t.Cleanup(func() { p.cmd.Process.Kill() })
			loaded := p.find("model loaded")
			if loaded == nil || loaded["model"] != tc.want {
				t.Fatalf("loaded %v, want model %s", loaded, tc.want)
			}
			if x, _ := loaded["execution"].(string); !strings.Contains(x, "planned on") {
				t.Errorf("model %s runs %q, want its execution planned", tc.want, x)
			}
			if d, _ := loaded["max_delay"].(string); d != tc.delay {
				t.Errorf("max_delay %s, want %s", d, tc.delay)
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			if code := waitExit(t, p.cmd, time.Minute); code != 0 {
				t.Errorf("after SIGTERM: exit %d; log %v", code, p.log())
			}
		})
	}
}

// writeConfigMapFile writes the ConfigMap entry named as path's file to
// local, as Kubernetes mounts it.
func writeConfigMapFile(t *testing.T, docs []manifest, path, local string) {
	t.Helper()
	for _, d := range docs {
		if text, ok := d.Data[filepath.Base(path)]; d.Kind == "ConfigMap" && ok {
			if err := os.WriteFile(local, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%s: no ConfigMap holds it", path)
}

// manifest is what TestDeployExamples reads of a Kubernetes object.
type manifest struct {
	Kind string
	Data map[string]string
	Spec struct {
		Containers []podContainer // a ServingRuntime's
		Template   struct {
			Spec struct{ Containers []podContainer }
		}
	}
}

type podContainer struct {
	Args         []string
	VolumeMounts []struct {
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

// manifests reads every object of a YAML file.
func manifests(t *testing.T, path string) []manifest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []manifest
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var m manifest
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, m)
	}
}

// container is the one container running genaic serve.
func container(t *testing.T, docs []manifest) podContainer {
	t.Helper()
	var found []podContainer
	for _, d := range docs {
		for _, c := range append(d.Spec.Containers, d.Spec.Template.Spec.Containers...) {
			if len(c.Args) > 0 && c.Args[0] == "serve" {
				found = append(found, c)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d containers run genaic serve, want 1", len(found))
	}
	return found[0]
}

// onVolume maps a path of the container to its place here, failing where
// no volume the container mounts holds it: a path elsewhere is the image's
// own, which a restart empties and may not be writable.
func onVolume(t *testing.T, local map[string]string, path string) string {
	t.Helper()
	for mount, dir := range local {
		if rel, err := filepath.Rel(mount, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Join(dir, rel)
		}
	}
	t.Fatalf("%s is on no volume the container mounts", path)
	return ""
}
