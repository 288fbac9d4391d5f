module example.com/jsonfmt

go 1.22

require github.com/modelcontextprotocol/go-sdk v0.2.0
