package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/genaic/genaic/engine"
	"github.com/genaic/genaic/internal/fixtures"
	"github.com/genaic/genaic/internal/testmedia"
	"github.com/genaic/genaic/serve"
	"github.com/genaic/genaic/vm"
)

// TestCPUClassFlag: run, bench and serve refuse a CPU class that is not
// one, naming the flag, before anything runs.
func TestCPUClassFlag(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests.json")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, cmd := range [][]string{
		{"run", imagePkg, "--requests", reqs},
		{"bench", imagePkg, "--requests", reqs},
		{"serve", missing, "--http", "127.0.0.1:0", "--grpc", ""},
	} {
		out, errOut, code := runCLI(t, append(cmd, "--cpu-class=realtime")...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "--cpu-class realtime: ") || !strings.Contains(errOut, "want normal or batch") {
			t.Errorf("%s --cpu-class=realtime: exit %d, stdout %q, stderr %q; want a usage error naming the flag and the classes", cmd[0], code, out, errOut)
		}
	}
}

// TestServeProcs: genaic serve runs Go on twice the processors Go gives
// the process, unless --procs or the GOMAXPROCS environment variable says
// how many; --procs beyond its limits is refused before anything runs,
// and the processors are as they were once serve returns.
func TestServeProcs(t *testing.T) {
	for _, c := range []struct {
		flag   int
		envSet bool
		cpus   int
		want   int
	}{
		{0, false, 2, 4},
		{0, false, 16, 32},
		{0, true, 16, 0},
		{3, false, 16, 3},
		{3, true, 16, 3},
	} {
		if got := serveProcs(c.flag, c.envSet, c.cpus); got != c.want {
			t.Errorf("serveProcs(%d, %v, %d) = %d, want %d", c.flag, c.envSet, c.cpus, got, c.want)
		}
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, v := range []string{"-1", fmt.Sprint(maxProcs + 1)} {
		out, errOut, code := runCLI(t, "serve", missing, "--http", "127.0.0.1:0", "--grpc", "", "--procs="+v)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "--procs "+v+": want 0") {
			t.Errorf("serve --procs=%s: exit %d, stdout %q, stderr %q; want a usage error naming the flag", v, code, out, errOut)
		}
	}
	before := runtime.GOMAXPROCS(0)
	if _, errOut, code := runCLI(t, "serve", missing, "--http", "127.0.0.1:0", "--grpc", "", "--procs", fmt.Sprint(before+3)); code == exitOK {
		t.Errorf("serve of a missing repository: exit 0 (%s)", errOut)
	}
	if after := runtime.GOMAXPROCS(0); after != before {
		t.Errorf("after serve --procs %d: GOMAXPROCS %d, want %d as before", before+3, after, before)
	}
}

// TestKnobLimitsFlagAndConfig: every engine setting beyond its limit is
// refused by the flag (run, bench and serve; serve's own settings by
// serve's) and by `serve --config` alike, with the same words after the
// setting's name; nothing runs.
func TestKnobLimitsFlagAndConfig(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests.json")
	dir := t.TempDir()
	// serve is given a repository that does not exist: were a setting
	// taken, it would fail on that instead of serving on.
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		flag, key, value string
	}{
		{"--workers", "workers", "300000"},
		{"--workers", "workers", "-1"},
		{"--threads", "threads", fmt.Sprint(engine.MaxThreads() + 1)},
		{"--threads", "threads", "-2"},
		{"--queue", "queue", fmt.Sprint(engine.MaxQueue + 1)},
		{"--queue", "queue", "-1"},
		{"--max-delay", "max_delay", "10000h"},
		{"--max-delay", "max_delay", "-1ms"},
		{"--max-media-bytes", "max_media_bytes", "100"},
		{"--max-media-bytes", "max_media_bytes", fmt.Sprint(int64(engine.MaxMediaBytes) + 1)},
		{"--default-priority", "default_priority", fmt.Sprint(serve.MaxPriority + 1)},
		{"--default-priority", "default_priority", "-1"},
		{"--default-timeout", "default_timeout", "-1s"},
		{"--default-timeout", "default_timeout", "2h"},
	} {
		name := c.flag + " " + c.value
		// What each says after "NAME VALUE: ".
		want := func(errOut, prefix string) string {
			_, after, ok := strings.Cut(errOut, prefix+" ")
			if !ok {
				t.Errorf("%s: %q does not name %s", name, errOut, prefix)
				return ""
			}
			_, reason, _ := strings.Cut(after, ": ")
			return strings.TrimSpace(reason)
		}
		var reasons []string
		for _, cmd := range [][]string{
			{"run", imagePkg, "--requests", reqs},
			{"bench", imagePkg, "--requests", reqs},
			{"serve", missing, "--http", "127.0.0.1:0", "--grpc", ""},
		} {
			if strings.HasPrefix(c.flag, "--default-") && cmd[0] != "serve" { // serve's alone
				continue
			}
			out, errOut, code := runCLI(t, append(cmd, c.flag+"="+c.value)...)
			if code != exitUsage || out != "" {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want a usage error", cmd[0], name, code, out, errOut)
			}
			reasons = append(reasons, want(errOut, c.flag))
		}
		config := filepath.Join(dir, strings.TrimLeft(c.flag, "-")+".yaml")
		for _, doc := range []string{
			fmt.Sprintf("defaults: { %s: %s }\n", c.key, c.value),
			fmt.Sprintf("models: { image_padded: { %s: %s } }\n", c.key, c.value),
		} {
			if err := os.WriteFile(config, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCLI(t, "serve", missing, "--http", "127.0.0.1:0", "--grpc", "", "--config", config)
			if code != exitUsage || out != "" {
				t.Errorf("serve --config %q: exit %d, stderr %q; want a usage error", doc, code, errOut)
			}
			reasons = append(reasons, want(errOut, c.key))
		}
		for _, r := range reasons[1:] {
			if r != reasons[0] || r == "" {
				t.Errorf("%s: the refusals differ: %q", name, reasons)
				break
			}
		}
	}
}

// TestBenchLimits: bench's own counts and durations have bounds, and an
// open loop's rate a floor, so that every run ends.
func TestBenchLimits(t *testing.T) {
	reqs := filepath.Join(imagePkg, "requests.json")
	for _, c := range []struct{ flag, value string }{
		{"--rate", "1e-9"},
		{"--rate", "0.5"},
		{"--rate", "NaN"},
		{"--rate", "-3"},
		{"--concurrency", "100000000"},
		{"--concurrency", "4,20000"},
		{"--timeout", "10000h"},
		{"--round-time", "2h"},
		{"--rounds", "1000000"},
	} {
		out, errOut, code := runCLI(t, "bench", imagePkg, "--requests", reqs, c.flag, c.value)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.flag) {
			t.Errorf("bench %s %s: exit %d, stderr %q; want a usage error naming the flag", c.flag, c.value, code, errOut)
		}
	}
}

// TestServeDeclineAndBackend: serve's --decline reaches the engines (the
// component's invocations count the decline in its stats), a --decline
// naming no component of the repository stops serve as it loads, as run
// refuses it, and --backend reaches them too: ONNX components put
// on the go backend, which this command gives no functions, stop serve as
// they stop run.
func TestServeDeclineAndBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs genaic as a process")
	}
	pkg, err := filepath.Abs(imagePkg)
	if err != nil {
		t.Fatal(err)
	}
	// serve listens before it loads, and must stop once loading refuses
	// what it was given: runCLIStdin fails the test after a minute where
	// it serves on instead.
	_, errOut, code := runCLIStdin(t, "", "serve", pkg, "--workers", "1", "--http", "127.0.0.1:0", "--grpc", "", "--decline", "nosuch=slow")
	_, runErr, runCode := runCLI(t, "run", pkg, "--requests", filepath.Join(pkg, "requests.json"), "--decline", "nosuch=slow")
	if code != exitUsage || runCode != exitUsage || !strings.Contains(errOut, `there is no component "nosuch" (the components: encoder`) ||
		!strings.Contains(runErr, `there is no component "nosuch" (the components: encoder`) {
		t.Errorf("an unknown component: serve exit %d (%s), run exit %d (%s); want both refused alike", code, errOut, runCode, runErr)
	}

	_, errOut, code = runCLIStdin(t, "", "serve", pkg, "--workers", "1", "--http", "127.0.0.1:0", "--grpc", "", "--backend", "onnx=go")
	_, runErr, runCode = runCLI(t, "run", pkg, "--requests", filepath.Join(pkg, "requests.json"), "--backend", "onnx=go")
	if code != exitUsage || runCode != exitUsage || !strings.Contains(errOut, "the go backend runs Go functions") || !strings.Contains(runErr, "the go backend runs Go functions") {
		t.Errorf("--backend onnx=go: serve exit %d (%s), run exit %d (%s); want both to fail on the go backend", code, errOut, runCode, runErr)
	}

	p := startServe(t, pkg, "--decline", "encoder=operator says slow")
	defer p.cmd.Process.Kill()
	resp, err := http.Get("http://" + p.http + "/v2/models/image_padded/genaic/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var stats vm.Stats
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		t.Fatal(err)
	}
	declined := int64(0)
	for reason, n := range stats.Components["encoder"].Declines {
		if strings.Contains(reason, "operator says slow") {
			declined += n
		}
	}
	if declined == 0 {
		t.Errorf("the warm-up ran encoder with no decline counted: %+v", stats.Components["encoder"])
	}
}

// TestInspectStatsURLBounded: a server's stats are read up to a bound,
// and an answer beyond it is refused, saying so.
func TestInspectStatsURLBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"components":{"x":{"invocations":1}},"pad":"`))
		chunk := []byte(strings.Repeat("x", 1<<16))
		for range maxServerStatsBytes/len(chunk) + 2 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
		w.Write([]byte(`"}`))
	}))
	defer srv.Close()
	_, errOut, code := runCLI(t, "inspect", imagePkg, "--stats", srv.URL)
	if code == exitOK || !strings.Contains(errOut, fmt.Sprintf("more than %d bytes", maxServerStatsBytes)) {
		t.Errorf("exit %d, %s; want the answer refused for its size", code, errOut)
	}
}

// TestRunMediaBudget: a request whose media would take more memory
// decoded and preprocessed than one request's media may fails alone with
// run/budget, grouped and solo, while the request beside it is answered:
// a PNG of 5792×5792 zero pixels (98 KB, under the pixel cap, some 900 MB
// decoded and tiled), a clip of five 2048×2048 zero PNG frames (320 MiB
// decoded), and a WAV clip of 150,000 16-bit samples (300 KB, some 1.5 MB
// decoded and preprocessed) under a 1 MiB budget.
func TestRunMediaBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	frame := testmedia.ZeroPNG(2048, 2048)
	for _, c := range []struct {
		pkg     string
		ok, big vm.Request
		flags   []string
	}{
		{"image_tiles", fixtures.ImageTiles(rng, "ok", 2), fixtures.EncodedRequest("bomb", "png", [][]byte{testmedia.ZeroPNG(5792, 5792)}), nil},
		{"video_fps", fixtures.VideoFPS(rng, "ok", 2), fixtures.VideoClip("bomb", [][]byte{frame, frame, frame, frame, frame}, 2), nil},
		{"audio_mel", fixtures.AudioMel(rng, "ok", 2), fixtures.EncodedRequest("bomb", "wav", [][]byte{fixtures.WAV16(16000, make([]int16, 150000))}), []string{"--max-media-bytes", "1048576"}},
	} {
		path := filepath.Join(t.TempDir(), "requests.json")
		writeRequestFile(t, path, c.ok, c.big)
		for _, mode := range [][]string{nil, {"--solo"}} {
			args := append(append([]string{"run", "../../testdata/packages/" + c.pkg, "--requests", path}, c.flags...), mode...)
			out, errOut, code := runCLI(t, args...)
			if code != exitDiags {
				t.Errorf("%s %v: exit %d: %s", c.pkg, mode, code, errOut)
				continue
			}
			got := 0
			for _, r := range decodeResponses(t, out).Responses {
				switch {
				case r.ID == "ok" && (r.Error != nil || len(r.Outputs) == 0):
					t.Errorf("%s %v: ok: %+v", c.pkg, mode, r.Error)
				case r.ID == "bomb" && (r.Error == nil || r.Error.Rule != "run/budget" || !strings.Contains(r.Error.Message, "--max-media-bytes")):
					t.Errorf("%s %v: bomb: %+v; want run/budget", c.pkg, mode, r.Error)
				}
				got++
			}
			if got != 2 {
				t.Errorf("%s %v: %d responses, want 2", c.pkg, mode, got)
			}
		}
	}
}
