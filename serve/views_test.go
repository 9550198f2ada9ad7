package serve

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/genaic/genaic/backend"
	"github.com/genaic/genaic/serve/oippb"
	"github.com/genaic/genaic/vm"
)

// inside reports whether data's memory lies within b's.
func inside(data any, b []byte) bool {
	mem, ok := rawMemory(data)
	if !ok || len(mem) == 0 || len(b) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&b[0]))
	return p >= lo && p+uintptr(len(mem)) <= lo+uintptr(len(b))
}

// TestFromBytesViews: at every offset of a buffer, fromBytes reads the
// elements encoding/binary reads, for every dtype; it views the buffer
// exactly where the bytes are aligned for the element (bytes copied
// otherwise, and always for booleans: checkptr, under -race, refuses a
// misaligned view), and a view's capacity ends with its bytes.
func TestFromBytesViews(t *testing.T) {
	words := make([]uint64, 8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	for dtype := range oipNames {
		for off := range 8 {
			for i := range buf {
				buf[i] = byte(i*7 + off)
				if dtype == "bool" {
					buf[i] &= 1
				}
			}
			n := 3
			b := buf[off : off+n*int(size(dtype))]
			got, err := fromBytes("x", dtype, []int64{int64(n)}, b)
			if err != nil {
				t.Fatalf("%s at %d: %v", dtype, off, err)
			}
			want, _ := backend.NewTensor(dtype, []int64{int64(n)})
			if _, err := binary.Decode(b, binary.LittleEndian, want.Data); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Data, want.Data) {
				t.Errorf("%s at %d: %v, want %v", dtype, off, got.Data, want.Data)
			}
			view := hostLittleEndian && dtype != "bool" && off%int(size(dtype)) == 0
			if inside(got.Data, b) != view {
				t.Errorf("%s at %d: views the bytes %v, want %v", dtype, off, !view, view)
			}
			if reflect.ValueOf(got.Data).Cap() != n {
				t.Errorf("%s at %d: capacity %d for %d elements", dtype, off, reflect.ValueOf(got.Data).Cap(), n)
			}
		}
	}
}

// TestReadBodyAligns: whatever the JSON header's length, the binary data
// after it starts on an 8-byte boundary, so that its tensors view the
// body; the body read is the one sent.
func TestReadBodyAligns(t *testing.T) {
	for hlen := range 20 {
		sent := make([]byte, hlen+24)
		for i := range sent {
			sent[i] = byte(i)
		}
		body, err := readBody(bytes.NewReader(sent), int64(len(sent)), 1<<20, strconv.Itoa(hlen))
		if err != nil || !bytes.Equal(body, sent) {
			t.Fatalf("header of %d: read %v, %v", hlen, body, err)
		}
		if a := uintptr(unsafe.Pointer(&body[hlen])) % 8; a != 0 {
			t.Errorf("header of %d: the binary data is %d bytes off an 8-byte boundary", hlen, a)
		}
	}
	if _, err := readBody(bytes.NewReader(make([]byte, 5)), 9, 1<<20, "0"); err == nil {
		t.Error("a body shorter than its length was read without an error")
	}
}

// holdAdmitted makes every request wait, once decoded and admitted, until
// n have been: all of their bodies are then decoded, each viewed by its
// tensors, before any runs. It returns the undo.
func holdAdmitted(n int) func() {
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	testHookAdmitted = func(*Model) {
		mu.Lock()
		if arrived++; arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(time.Minute): // a request lost before admission fails the test below
		}
	}
	return func() { testHookAdmitted = nil }
}

// TestViewedInputsHeld: requests whose inputs view their HTTP bodies or
// their gRPC messages (raw contents, and typed contents of the input's
// own type), all decoded before any runs and then run at once, are each
// answered as the solo engine answers them: no request's bytes were
// reused for another's, or written, while its tensors were read.
func TestViewedInputsHeld(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed"), NoWarmup: true})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	gc := grpcClient(t, s)
	reqs, want := references(t, s, "text_packed")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 2 * time.Minute}
	const n = 32
	ways := map[string]func(i int) (map[string]*backend.Tensor, error){
		"http binary": func(i int) (map[string]*backend.Tensor, error) {
			body, hlen := oipJSON(t, reqs[i], nil, true)
			a := post(client, ts.URL+"/v2/models/text_packed/infer", body, hlen)
			if a.err == nil && a.status != http.StatusOK {
				a.err = fmt.Errorf("status %d: %s", a.status, a.message)
			}
			return a.outputs, a.err
		},
		"grpc raw": func(i int) (map[string]*backend.Tensor, error) {
			return grpcInfer(gc, grpcRequest("text_packed", reqs[i], true, nil))
		},
		"grpc typed": func(i int) (map[string]*backend.Tensor, error) {
			return grpcInfer(gc, grpcRequest("text_packed", reqs[i], false, nil))
		},
	}
	for name, way := range ways {
		t.Run(name, func(t *testing.T) {
			defer holdAdmitted(n)()
			var wg sync.WaitGroup
			for k := range n {
				wg.Go(func() {
					i := k % len(reqs)
					got, err := way(i)
					if err == nil {
						err = same(got, want[i].Outputs.Map())
					}
					if err != nil {
						t.Errorf("%s: %v", reqs[i].ID, err)
					}
				})
			}
			wg.Wait()
		})
	}
}

func grpcInfer(gc oippb.GRPCInferenceServiceClient, r *oippb.ModelInferRequest) (map[string]*backend.Tensor, error) {
	a, err := gc.ModelInfer(context.Background(), r)
	if err != nil {
		return nil, err
	}
	return grpcOutputs(a)
}

// TestDecodedInputsView: the inputs of a binary HTTP request read as the
// server reads it, and of a gRPC request's raw contents, view the body
// and the message (the path TestViewedInputsHeld holds to its promise).
func TestDecodedInputsView(t *testing.T) {
	s := newServer(t, Config{Repo: repo(t, "text_packed"), NoWarmup: true})
	md := s.model("text_packed")
	reqs, err := readRequests(md.Dir)
	if err != nil {
		t.Fatal(err)
	}
	sent, hlen := oipJSON(t, reqs[0], nil, true)
	body, err := readBody(bytes.NewReader(sent), int64(len(sent)), 1<<20, strconv.Itoa(hlen))
	if err != nil {
		t.Fatal(err)
	}
	req, _, _, _, err := s.decodeHTTP(md, strconv.Itoa(hlen), body)
	if err != nil {
		t.Fatal(err)
	}
	g := grpcRequest("text_packed", reqs[0], true, nil)
	greq, _, err := decodeGRPC(md, g)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range g.Inputs {
		if !inside(req.Inputs[in.Name].Data, body[hlen:]) {
			t.Errorf("HTTP input %s is a copy of the body's bytes", in.Name)
		}
		if !inside(greq.Inputs[in.Name].Data, g.RawInputContents[i]) {
			t.Errorf("gRPC input %s is a copy of its raw contents", in.Name)
		}
	}
	check := func(r vm.Request) {
		if resp := md.eng.Run(context.Background(), r); resp.Err != nil {
			t.Error(resp.Err)
		}
	}
	check(req)
	check(greq)
}
