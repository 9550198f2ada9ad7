// Package onnxpb holds Go types generated from a subset of the ONNX schema
// (onnx.proto beside this file).
package onnxpb

//go:generate protoc --go_out=. --go_opt=paths=source_relative onnx.proto
