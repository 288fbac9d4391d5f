package main

import (
	"net/http"
	"path/filepath"

	"github.com/gin-gonic/gin"
)

const reports = "/srv/reports"

func main() {
	r := gin.Default()
	r.GET("/reports/:name", func(c *gin.Context) {
		name := c.Param("name")
		c.File(filepath.Join(reports, name))
	})
	r.GET("/login/done", func(c *gin.Context) {
		next := c.Query("next")
		c.Redirect(http.StatusFound, next)
	})
	r.Run("127.0.0.1:8084")
}
