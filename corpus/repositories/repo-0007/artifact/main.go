package main

import (
	"crypto/subtle"
	"encoding/json"
	"log"
	"net/http"
	"os"
	"sync"
)

var (
	mu    sync.RWMutex
	flags = map[string]bool{}
	token = os.Getenv("ADMIN_TOKEN")
)

func admin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		if token == "" || subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1 {
			http.Error(w, "unauthorised", http.StatusUnauthorized)
			return
		}
		next(w, r)
	}
}

func setFlag(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name    string `json:"name"`
		Enabled bool   `json:"enabled"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	mu.Lock()
	flags[body.Name] = body.Enabled
	mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func getFlags(w http.ResponseWriter, r *http.Request) {
	mu.RLock()
	defer mu.RUnlock()
	json.NewEncoder(w).Encode(flags)
}

func main() {
	http.HandleFunc("/flags", getFlags)
	http.HandleFunc("/admin/flags", admin(setFlag))
	log.Fatal(http.ListenAndServe("0.0.0.0:8083", nil))
}
