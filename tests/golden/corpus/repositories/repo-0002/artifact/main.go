package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"

	_ "github.com/mattn/go-sqlite3"
)

var db *sql.DB

const storage = "/srv/docstore/files"

type Doc struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

func search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	rows, err := db.Query(fmt.Sprintf("SELECT id, title FROM docs WHERE title LIKE '%%%s%%'", q))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer rows.Close()
	var out []Doc
	for rows.Next() {
		var d Doc
		if err := rows.Scan(&d.ID, &d.Title); err == nil {
			out = append(out, d)
		}
	}
	json.NewEncoder(w).Encode(out)
}

func download(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	data, err := os.ReadFile(filepath.Join(storage, name))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Write(data)
}

func main() {
	var err error
	db, err = sql.Open("sqlite3", "docs.db")
	if err != nil {
		log.Fatal(err)
	}
	http.HandleFunc("/search", search)
	http.HandleFunc("/download", download)
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", nil))
}
