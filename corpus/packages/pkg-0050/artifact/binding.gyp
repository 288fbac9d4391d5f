{
  "targets": [
    { "target_name": "lmdb_lite", "sources": ["src/binding.cc"], "libraries": ["-llmdb"] }
  ]
}
