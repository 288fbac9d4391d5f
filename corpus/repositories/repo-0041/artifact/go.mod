module example.com/reports

go 1.22

require (
	github.com/gin-gonic/gin v1.10.0
)
