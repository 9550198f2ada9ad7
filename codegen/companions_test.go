package codegen_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestUngroupedInvokePassesCompanions: an ungrouped component (here the
// audio adapter) whose input level names a workflow value rather than one
// of its ports (the owner `wav_owner`) has its levels checked against that
// value, by the interpreter and so by a generated executor: the executor's
// invoke must hand it over, or every request fails with run/input.
func TestUngroupedInvokePassesCompanions(t *testing.T) {
	files := generate(t, "vm/adapters/testdata/audio_encoder.yaml", "exec/audio", "audio")
	var src string
	for _, f := range files {
		src += string(f.Data)
	}
	// The call runs to the line that checks its error.
	call := regexp.MustCompile(`(?s)InvokeHolding\(ctx, \d+, "audio_preprocess", .*?\n\s*if err != nil`).FindString(src)
	if call == "" {
		t.Fatalf("no invoke of audio_preprocess in the generated executor")
	}
	if !strings.Contains(call, `"wav_owner":`) {
		t.Errorf("the invoke of audio_preprocess does not pass the workflow value `wav_owner` its input level names:\n%s", call)
	}
}
