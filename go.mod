module github.com/genaic/genaic

go 1.26.0

require github.com/alecthomas/participle/v2 v2.1.4

require (
	github.com/dave/jennifer v1.7.1
	github.com/yalue/onnxruntime_go v1.27.0
	golang.org/x/tools v0.52.0
	google.golang.org/protobuf v1.36.12
	gopkg.in/yaml.v3 v3.0.1
)
