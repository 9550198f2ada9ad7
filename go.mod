module github.com/genaic/genaic

go 1.26

require (
	github.com/alecthomas/participle/v2 v2.1.4
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
