package main

import (
	"log"
	"net/http"
	"path/filepath"
	"strings"
)

const reports = "/srv/reports"

func report(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if !filepath.IsLocal(name) || strings.ContainsRune(name, 0) {
		http.Error(w, "bad name", http.StatusBadRequest)
		return
	}
	http.ServeFile(w, r, filepath.Join(reports, name))
}

func done(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		next = "/"
	}
	http.Redirect(w, r, next, http.StatusFound)
}

func main() {
	http.HandleFunc("/report", report)
	http.HandleFunc("/login/done", done)
	log.Fatal(http.ListenAndServe("127.0.0.1:8085", nil))
}
