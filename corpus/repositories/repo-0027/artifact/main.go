package main

import (
	"database/sql"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"

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
	rows, err := db.Query("SELECT id, title FROM docs WHERE title LIKE ?", "%"+q+"%")
	if err != nil {
		http.Error(w, "search failed", http.StatusInternalServerError)
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
	name := filepath.Base(r.URL.Query().Get("name"))
	full := filepath.Join(storage, name)
	if !strings.HasPrefix(full, storage+string(os.PathSeparator)) {
		http.Error(w, "bad name", http.StatusBadRequest)
		return
	}
	data, err := os.ReadFile(full)
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
