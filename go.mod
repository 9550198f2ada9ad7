module github.com/genaic/genaic

go 1.26

require github.com/alecthomas/participle/v2 v2.1.4

require (
	github.com/yalue/onnxruntime_go v1.27.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
