package main

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
)

const dir = "/srv/avatars"

func upload(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 2<<20)
	file, _, err := r.FormFile("avatar")
	if err != nil {
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	defer file.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(file, head)
	if ct := http.DetectContentType(head[:n]); ct != "image/png" && ct != "image/jpeg" {
		http.Error(w, "images only", http.StatusUnsupportedMediaType)
		return
	}
	id := make([]byte, 16)
	rand.Read(id)
	name := hex.EncodeToString(id)
	out, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		http.Error(w, "store failed", http.StatusInternalServerError)
		return
	}
	defer out.Close()
	out.Write(head[:n])
	io.Copy(out, file)
	w.Write([]byte(name))
}

func main() {
	http.HandleFunc("/avatar", upload)
	http.Handle("/avatars/", http.StripPrefix("/avatars/", http.FileServer(http.Dir(dir))))
	log.Fatal(http.ListenAndServe("127.0.0.1:8082", nil))
}
