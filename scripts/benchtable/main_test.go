package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTable: values group by build, benchmark and figure (the GOMAXPROCS
// suffix dropped), medians and ranges come from every run, an all-zero
// figure is left out, and a bench document's modes become figures too.
func TestTable(t *testing.T) {
	in := strings.Join([]string{
		"base\tBenchmarkW/a-2   100  3 x/s  0 ns/op",
		"head\tBenchmarkW/a-16  100  8 x/s  0 ns/op",
		"noise between the runs",
		"base\tBenchmarkW/a-2   100  1 x/s  0 ns/op",
		"head\tBenchmarkW/a-16  100  4 x/s  0 ns/op",
		"base\tBenchmarkW/a-2   100  2 x/s  0 ns/op",
		"head\tBenchmarkW/a-16  100  6 x/s  0 ns/op",
		`head	{"modes":[{"name":"grouped","concurrency":16,"requests_per_second":900,"vs_one_at_a_time":2.5,"latency_ms":{"p50":0.2,"p99":1.5},"groups":{"enc":{"mean_size":15.5}}}]}`,
	}, "\n")
	tb := newTable()
	if err := tb.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := tb.write(&out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"2 [1–3] 3",
		"6 [4–8] 3",
		"vs-one-at-a-time",
		"group-size/enc",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "ns/op") {
		t.Errorf("a figure zero in every run is shown:\n%s", got)
	}
	// head/base of the medians: 6/2.
	if f := strings.Fields(lineOf(got, "x/s")); len(f) == 0 || f[0] != "W/a" || f[len(f)-1] != "3.000" {
		t.Errorf("the line of W/a's x/s is not the figure with a ratio of medians of 3.000: %q", f)
	}
	// A line without a build's name belongs to the build "-".
	one := newTable()
	if err := one.read(strings.NewReader("BenchmarkUnlabelled-2  10  5 y")); err != nil || len(one.builds) != 1 || one.builds[0] != "-" {
		t.Errorf("an unlabelled line: builds %q, %v", one.builds, err)
	}
	if err := newTable().read(strings.NewReader("head\t{not json")); err == nil {
		t.Error("a broken bench document is not reported")
	}
}

func lineOf(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestPackUnpack: acceptance.sh pack puts builds and the cache's library
// and models into one folder, smaller than they are, and unpack gives back
// the same bytes, the binaries executable, without Go on the path.
func TestPackUnpack(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"head/e2e.test":                         strings.Repeat("test binary ", 4000),
		"head/genaic":                           strings.Repeat("cli ", 5000),
		"exp/e2e.test":                          strings.Repeat("another binary ", 3000),
		"cache/onnxruntime/libonnxruntime.so.1": strings.Repeat("library ", 9000),
		"cache/models/m.onnx":                   strings.Repeat("model ", 2000),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "acceptance.sh"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	run := func(args ...string) {
		cmd := exec.Command(bash, append([]string{script}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GENAIC_CACHE=" + filepath.Join(dir, "cache")}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("acceptance.sh %s: %v\n%s", strings.Join(args, " "), err, b)
		}
	}
	run("pack", out, filepath.Join(dir, "head"), filepath.Join(dir, "exp"))
	if b, err := os.ReadFile(filepath.Join(out, "builds", "head", "genaic.gz")); err != nil || len(b) >= len(files["head/genaic"]) {
		t.Fatalf("packed genaic: %d bytes of %d, %v", len(b), len(files["head/genaic"]), err)
	}
	run("unpack", out)
	for name, body := range files {
		packed := filepath.Join(out, "builds", name)
		if strings.HasPrefix(name, "cache/") {
			packed = filepath.Join(out, name)
		}
		b, err := os.ReadFile(packed)
		if err != nil || string(b) != body {
			t.Errorf("%s unpacked as %d bytes (%v), want %d", name, len(b), err, len(body))
			continue
		}
		if fi, _ := os.Stat(packed); !strings.HasPrefix(name, "cache/") && fi.Mode()&0o100 == 0 {
			t.Errorf("%s is not executable after unpack: %v", name, fi.Mode())
		}
	}
}
