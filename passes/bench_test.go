package passes

import (
	"fmt"
	"strings"
	"testing"
)

// generatedWorkflow writes a valid v1.1 document with n grouped image
// encoders (one packed level, padded patches, two budgets), each invoked
// once and emitted with its companions.
func generatedWorkflow(n int) []byte {
	var in, out, comps, steps strings.Builder
	for i := range n {
		fmt.Fprintf(&in, `      px%[1]d:
        contract:
          dtype: float32
          shape: [images, patches, features]
          batch_layout: { kind: token_packed, axis: 0, levels: [{ offsets: off%[1]d, owner: own%[1]d }] }
          padding: [{ dimension: patches, valid_lengths: len%[1]d }]
        role: { kind: opaque }
        source: { kind: request }
      len%[1]d: { contract: { dtype: int64, shape: [images] }, role: { kind: opaque }, source: { kind: request } }
      off%[1]d: { contract: { dtype: int64, shape: [offsets_len] }, role: { kind: opaque }, source: { kind: request } }
      own%[1]d: { contract: { dtype: int64, shape: [images] }, role: { kind: opaque }, source: { kind: request } }
`, i)
		fmt.Fprintf(&out, `      emb%[1]d:
        contract:
          dtype: float32
          shape: [images, hidden]
          batch_layout: { kind: token_packed, axis: 0, levels: [{ offsets: off%[1]d, owner: own%[1]d, extent: preserved }] }
        role: tensor
        stage: pre_adapter
      off%[1]d: { contract: { dtype: int64, shape: [offsets_len] }, role: tensor, stage: pre_adapter }
      own%[1]d: { contract: { dtype: int64, shape: [images] }, role: tensor, stage: pre_adapter }
`, i)
		fmt.Fprintf(&comps, `      enc%[1]d:
        implementation: { kind: onnx, artifact: enc%[1]d.onnx }
        batch_capacity:
          uniform_dimensions: [features]
          budgets: [{ dimensions: [images], max_total: 16 }, { dimensions: [images, patches], max_total: 4096 }]
        ports:
          inputs:
            px:
              dtype: float32
              shape: [images, patches, features]
              batch_layout: { kind: token_packed, axis: 0, levels: [{ offsets: off, owner: own }] }
              padding: [{ dimension: patches, valid_lengths: len }]
            len: { dtype: int64, shape: [images] }
            off: { dtype: int64, shape: [offsets_len] }
            own: { dtype: int64, shape: [images] }
          outputs:
            emb:
              dtype: float32
              shape: [images, hidden]
              batch_layout: { kind: token_packed, axis: 0, levels: [{ offsets: off, owner: own, extent: preserved }] }
`, i)
		fmt.Fprintf(&steps, `      - { kind: invoke, component: enc%[1]d, inputs: { px: px%[1]d, len: len%[1]d, off: off%[1]d, own: own%[1]d }, outputs: { emb: e%[1]d } }
      - { kind: emit, value: e%[1]d, output: emb%[1]d, mode: replace }
      - { kind: emit, value: off%[1]d, output: off%[1]d, mode: replace }
      - { kind: emit, value: own%[1]d, output: own%[1]d, mode: replace }
`, i)
	}
	return []byte("schema_version: v1.1\npipeline:\n  workflow:\n    inputs:\n" + in.String() +
		"    outputs:\n" + out.String() + "    components:\n" + comps.String() + "    steps:\n" + steps.String())
}

func TestGeneratedWorkflowIsValid(t *testing.T) {
	d, err := CheckSource("gen.yaml", generatedWorkflow(3), Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Diags()) != 0 {
		t.Fatalf("the generated workflow has diagnostics: %v", d.Diags())
	}
}

// BenchmarkCheckGenerated measures the whole check pipeline on generated
// workflows of growing size; the time per component should stay flat.
func BenchmarkCheckGenerated(b *testing.B) {
	for _, n := range []int{250, 500, 1000, 2000, 4000} {
		src := generatedWorkflow(n)
		b.Run(fmt.Sprintf("components=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				d, err := CheckSource("gen.yaml", src, Options{})
				if err != nil || len(d.Diags()) != 0 {
					b.Fatalf("err %v, %d diagnostics", err, len(d.Diags()))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/component")
		})
	}
}
