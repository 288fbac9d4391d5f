package main

import (
	"net/http"

	"example.com/inventory/internal/store"
	"github.com/gin-gonic/gin"
)

func main() {
	db, err := store.Open()
	if err != nil {
		panic(err)
	}
	r := gin.Default()
	r.GET("/items", func(c *gin.Context) {
		order := c.DefaultQuery("sort", "name")
		rows, err := db.Query("SELECT id, name, qty FROM items ORDER BY " + order)
		if err != nil {
			c.JSON(http.StatusInternalServerError, gin.H{"error": err.Error()})
			return
		}
		defer rows.Close()
		var items []gin.H
		for rows.Next() {
			var id, qty int
			var name string
			rows.Scan(&id, &name, &qty)
			items = append(items, gin.H{"id": id, "name": name, "qty": qty})
		}
		c.JSON(http.StatusOK, items)
	})
	r.Run("127.0.0.1:8081")
}
