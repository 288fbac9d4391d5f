package main

import (
	"log"
	"net/http"
)

func main() {
	mux := http.NewServeMux()
	mux.HandleFunc("/ping", ping)
	mux.HandleFunc("/probe", probe)
	log.Fatal(http.ListenAndServe("127.0.0.1:9000", mux))
}
